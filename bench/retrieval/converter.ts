/**
 * The COPY converters in process, on synthetic COPY output of the benchmark
 * table `(id int, region text, amount int, note text)`: ns of CPU a row for
 * binary COPY → Arrow columns (the Flight path) beside COPY text → JSON
 * bytes (the SSE and platform.retrieval.v1 path) in the same run. The data
 * is fed in 64 KiB chunks, as the COPY stream arrives. Never run by the test suite.
 *
 *   node --import tsx bench/retrieval/converter.ts [rows=200000] [reps=15]
 */
import { arrowCopyColumn, CopyArrowConverter } from '../../domains/retrieval/sources/postgres/arrow.ts';
import { CopyJsonConverter, type CopyReader } from '../../domains/retrieval/sources/postgres/copy.ts';

const [rows = 200_000, reps = 15] = process.argv.slice(2).map(Number);
const REGIONS = ['north', 'south', 'east', 'west'];
const values = Array.from({ length: rows }, (_, i) => [
  i + 1,
  REGIONS[i % 4] as string,
  (i * 37) % 10_000,
  `note ${i}`,
]);

/** The rows as COPY's text format. */
const text = Buffer.from(values.map((row) => `${row.join('\t')}\n`).join(''));

/** The rows as COPY's binary format (PostgreSQL manual, COPY "Binary Format"): header, tuples, trailer. */
function binaryCopy(): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)];
  for (const row of values) {
    const fields = row.map((v) => {
      if (typeof v === 'number') {
        const field = Buffer.alloc(8);
        field.writeInt32BE(4, 0);
        field.writeInt32BE(v, 4);
        return field;
      }
      const bytes = Buffer.from(v);
      const head = Buffer.alloc(4);
      head.writeInt32BE(bytes.length);
      return Buffer.concat([head, bytes]);
    });
    const count = Buffer.alloc(2);
    count.writeInt16BE(row.length);
    parts.push(count, ...fields);
  }
  parts.push(Buffer.from([0xff, 0xff]));
  return Buffer.concat(parts);
}

const chunksOf = (bytes: Buffer) => {
  const chunks: Buffer[] = [];
  for (let p = 0; p < bytes.length; p += 65_536) chunks.push(bytes.subarray(p, p + 65_536));
  return chunks;
};
const textChunks = chunksOf(text);
const binaryChunks = chunksOf(binaryCopy());

const table = [
  { name: 'id', type: 'integer', domain: false },
  { name: 'region', type: 'text', domain: false },
  { name: 'amount', type: 'integer', domain: false },
  { name: 'note', type: 'text', domain: false },
];

function run(make: () => CopyReader<unknown>, chunks: readonly Buffer[]): number {
  const converter = make();
  let batches = 0;
  for (const chunk of chunks) batches += converter.push(chunk).length;
  if (converter.end()) batches++;
  return batches;
}

/** Median ns of CPU a row over `reps` runs, after two warm-up runs. */
function measure(make: () => CopyReader<unknown>, chunks: readonly Buffer[]): number {
  run(make, chunks);
  run(make, chunks);
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) {
    const before = process.cpuUsage();
    run(make, chunks);
    const used = process.cpuUsage(before);
    samples.push(((used.user + used.system) * 1000) / rows);
  }
  return samples.sort((a, b) => a - b)[samples.length >> 1] as number;
}

const arrow = measure(() => new CopyArrowConverter(table.map(arrowCopyColumn), 10_000), binaryChunks);
const json = measure(
  () =>
    new CopyJsonConverter(
      table.map((c) => ({ name: c.name, kind: c.type === 'integer' ? 'number' : 'text' })),
      10_000,
    ),
  textChunks,
);
process.stdout.write(
  `binary COPY → Arrow ${arrow.toFixed(0)} ns/row, COPY → ` +
    `JSON ${json.toFixed(0)} ns/row ` +
    `(Arrow ${(arrow / json).toFixed(2)}× JSON), ${rows} rows\n`,
);
