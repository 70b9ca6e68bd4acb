/**
 * The COPY converters in process, on synthetic COPY text of the benchmark
 * table `(id int, region text, amount int, note text)`: ns of CPU a row for
 * COPY → Arrow columns (the Flight path) beside COPY → JSON bytes (the SSE
 * and platform.retrieval.v1 path) in the same run. The text is fed in
 * 64 KiB chunks, as the COPY stream arrives. Never run by the test suite.
 *
 *   node --import tsx bench/retrieval/converter.ts [rows=200000] [reps=15]
 */
import { arrowCopyColumn, CopyArrowConverter } from '../../domains/retrieval/sources/postgres/arrow.ts';
import { CopyJsonConverter, type CopyRowReader } from '../../domains/retrieval/sources/postgres/copy.ts';

const [rows = 200_000, reps = 15] = process.argv.slice(2).map(Number);
const REGIONS = ['north', 'south', 'east', 'west'];
const text = Array.from(
  { length: rows },
  (_, i) => `${i + 1}\t${REGIONS[i % 4]}\t${(i * 37) % 10_000}\tnote number ${i}\n`,
).join('');
const bytes = Buffer.from(text);
const chunks: Buffer[] = [];
for (let p = 0; p < bytes.length; p += 65_536) chunks.push(bytes.subarray(p, p + 65_536));

const table = [
  { name: 'id', type: 'integer', domain: false },
  { name: 'region', type: 'text', domain: false },
  { name: 'amount', type: 'integer', domain: false },
  { name: 'note', type: 'text', domain: false },
];

function run(make: () => CopyRowReader<unknown>): number {
  const converter = make();
  let batches = 0;
  for (const chunk of chunks) batches += converter.push(chunk).length;
  if (converter.end()) batches++;
  return batches;
}

/** Median ns of CPU a row over `reps` runs, after two warm-up runs. */
function measure(make: () => CopyRowReader<unknown>): number {
  run(make);
  run(make);
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) {
    const before = process.cpuUsage();
    run(make);
    const used = process.cpuUsage(before);
    samples.push(((used.user + used.system) * 1000) / rows);
  }
  return samples.sort((a, b) => a - b)[samples.length >> 1] as number;
}

const arrow = measure(() => new CopyArrowConverter(table.map(arrowCopyColumn), 10_000));
const json = measure(
  () =>
    new CopyJsonConverter(
      table.map((c) => ({ name: c.name, kind: c.type === 'integer' ? 'number' : 'text' })),
      10_000,
    ),
);
process.stdout.write(
  `COPY → Arrow ${arrow.toFixed(0)} ns/row, COPY → ` +
    `JSON ${json.toFixed(0)} ns/row ` +
    `(Arrow ${(arrow / json).toFixed(2)}× JSON), ${rows} rows\n`,
);
