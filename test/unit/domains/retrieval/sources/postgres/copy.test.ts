/**
 * COPY text → JSON arrays (domains/retrieval/sources/postgres/copy.ts): rows and
 * UTF-8 characters split across chunks at every byte, each kind written as
 * PostgreSQL's row_to_json writes it, batches of at most batchSize whose
 * row offsets mark each row's text. The
 * input is COPY text format as the manual specifies it; the Postgres
 * integration tests compare against a real server's row_to_json.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type CopyColumn,
  CopyJsonConverter,
  MAX_ROW_BYTES,
} from '../../../../../../domains/retrieval/sources/postgres/copy.ts';
import type { JsonRows } from '../../../../../../domains/retrieval/sources/types.ts';

const COLUMNS: CopyColumn[] = [
  { name: 'id', kind: 'number' },
  { name: 'note "q"', kind: 'text' },
];
const ROWS = [
  { id: 1, 'note "q"': 'plain' },
  { id: -2, 'note "q"': 'quote " back \\ slash\nnewline\ttab\r\b\f\v\u0001\u001f\u007f' },
  { id: 3, 'note "q"': 'ünïcödé 😀 and 𝄞' },
  { id: 4, 'note "q"': null },
  { id: 5, 'note "q"': '' },
];

const COPY_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
};

/** A value as COPY text format writes it. */
const copyField = (value: unknown) =>
  value === null ? '\\N' : String(value).replace(/[\\\b\f\n\r\t\v]/g, (c) => COPY_ESCAPES[c] as string);
const copyText = (rows: Record<string, unknown>[]) =>
  rows.map((r) => `${Object.values(r).map(copyField).join('\t')}\n`).join('');

async function* split(bytes: Buffer, at: number[]): AsyncGenerator<Buffer> {
  let start = 0;
  for (const cut of [...at, bytes.length]) {
    yield bytes.subarray(start, cut);
    start = cut;
  }
}

/** A batch's row texts, cut at its offsets; checked against the array the batch's bytes parse to. */
function rowTexts({ json, ends }: JsonRows): string[] {
  const texts = ends.map((end, i) => json.toString('utf8', i === 0 ? 1 : (ends[i - 1] as number) + 1, end));
  assert.deepEqual(
    JSON.parse(json.toString()),
    texts.map((text) => JSON.parse(text)),
  );
  return texts;
}

async function collect(chunks: AsyncIterable<Buffer>, batchSize: number, columns = COLUMNS): Promise<string[][]> {
  const out: string[][] = [];
  const converter = new CopyJsonConverter(columns, batchSize);
  for await (const chunk of chunks) for (const batch of converter.push(chunk)) out.push(rowTexts(batch));
  const last = converter.end();
  if (last) out.push(rowTexts(last));
  return out;
}

test(
  'rows split across chunks at any byte, inside a 4-byte character too, ' + 'come back whole and escaped as JSON',
  async () => {
    const bytes = Buffer.from(copyText(ROWS));
    const expected = ROWS.map((r) => JSON.stringify(r));
    for (let cut = 1; cut < bytes.length; cut++) {
      const batches = await collect(split(bytes, [cut]), 2);
      assert.deepEqual(
        batches.map((b) => b.length),
        [2, 2, 1],
      );
      assert.deepEqual(batches.flat(), expected, `cut at byte ${cut}`);
    }
    const everyByte = await collect(
      split(
        bytes,
        Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
      ),
      10,
    );
    assert.deepEqual(everyByte.flat(), expected);
  },
);

test('numbers, booleans and json as row_to_json writes them', () => {
  const converter = new CopyJsonConverter(
    [
      { name: 'n', kind: 'number' },
      { name: 'b', kind: 'boolean' },
      { name: 'j', kind: 'json' },
    ],
    10,
  );
  const pushed = converter.push(
    Buffer.from(
      [
        '12.50\tt\t{"a": "x\\\\\\\\"}',
        'NaN\tf\t[1,\\n\\t2]',
        'Infinity\t\\N\t\\N',
        '-Infinity\tt\t"\\\\u00e9"',
        '-7e-05\tf\tnull',
        '', // the trailing newline
      ].join('\n'),
    ),
  );
  assert.deepEqual(pushed, [], 'a batch is handed on when full or at the end');
  const rows = rowTexts(converter.end() as JsonRows);
  assert.deepEqual(rows, [
    '{"n":12.50,"b":true,"j":{"a": "x\\\\"}}',
    '{"n":"NaN","b":false,"j":[1,  2]}',
    '{"n":"Infinity","b":null,"j":null}',
    '{"n":"-Infinity","b":true,"j":"\\u00e9"}',
    '{"n":-7e-05,"b":false,"j":null}',
  ]);
  assert.ok(
    rows.every((row) => !/[\r\n]/.test(row)),
    "a json value's line breaks become spaces",
  );
});

test('a stream that ends inside a row or a row short of fields fails; an empty stream yields nothing', async () => {
  await assert.rejects(collect(split(Buffer.from('1\tx\n2\ty'), []), 10), /ended inside a row/);
  await assert.rejects(collect(split(Buffer.from('1\n'), []), 10), /fewer fields/);
  assert.deepEqual(await collect(split(Buffer.alloc(0), []), 10), []);
});

test('fields longer than the short-field scan end at their own tab, escaped tabs inside them included', async () => {
  const columns: CopyColumn[] = [
    { name: 'long', kind: 'text' },
    { name: 'n', kind: 'number' },
  ];
  const rows = [
    { long: 'x'.repeat(100), n: 1 },
    { long: `${'y'.repeat(31)}\tz`, n: 2 },
    { long: `${'w'.repeat(40)}\t${'v'.repeat(40)}`, n: 3 },
    { long: 'short', n: 4 },
  ];
  const batches = await collect(split(Buffer.from(copyText(rows)), []), 10, columns);
  assert.deepEqual(
    batches.flat().map((text) => JSON.parse(text)),
    rows,
  );
});

/** `bytes` in pieces of `size`, as a socket would hand them over. */
async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

test('a large row arriving in many small pieces comes back whole, and the rows after it too', async () => {
  const rows = [
    { id: 1, 'note "q"': 'z'.repeat(4 << 20) },
    { id: 2, 'note "q"': 'after' },
  ];
  const batches = await collect(pieces(Buffer.from(copyText(rows)), 4096), 1);
  assert.deepEqual(
    batches.map((b) => JSON.parse(b[0] as string)),
    rows,
  );
});

test(
  'a row longer than MAX_ROW_BYTES fails the read with row_too_large, ' + 'whether it arrives whole or in pieces',
  async () => {
    const huge = Buffer.from(copyText([{ id: 1, 'note "q"': 'h'.repeat(MAX_ROW_BYTES + 1) }]));
    for (const size of [64 << 10, huge.length]) {
      await assert.rejects(
        collect(pieces(huge, size), 10),
        (error: Error & { reason?: string }) => error.reason === 'row_too_large',
      );
    }
  },
);

test('batches of one row each hold their own bytes, not a 64 KiB buffer, however many one chunk closes', () => {
  const rows = Array.from({ length: 5000 }, (_, i) => ({ id: i, 'note "q"': `n${i}` }));
  const chunk = Buffer.from(copyText(rows));
  const batches = new CopyJsonConverter(COLUMNS, 1).push(chunk);
  const last = batches.at(-1) as JsonRows;
  assert.equal(batches.length, rows.length);
  assert.deepEqual(rowTexts(last), [JSON.stringify(rows.at(-1))]);
  const held = new Set(batches.map((b) => b.json.buffer));
  const bytes = [...held].reduce((n, buffer) => n + buffer.byteLength, 0);
  // Each small batch is a copy of its own bytes: the JSON of one row, not a 64 KiB buffer each (300 MB here).
  assert.ok(bytes < 8 * chunk.length, `${bytes} bytes held for ${chunk.length} bytes of COPY`);
});
