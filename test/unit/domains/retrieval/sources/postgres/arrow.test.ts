/**
 * COPY text → Arrow record batches (domains/retrieval/sources/postgres/arrow.ts),
 * read back with apache-arrow's own IPC reader: every specialised parse
 * (ints, int8 past 2^53, floats, booleans, text with COPY escapes, dates,
 * timestamps, json text) and NULL, rows split across chunks at every byte,
 * batches intact after the converter reused its buffers for the next one,
 * the edges of the one-pass text and integer scans and of a validity bitmap's
 * leading run of set bits, and malformed or oversized rows refused.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tableFromIPC } from 'apache-arrow';
import { arrowCopyColumn, CopyArrowConverter } from '../../../../../../domains/retrieval/sources/postgres/arrow.ts';
import { MAX_ROW_BYTES } from '../../../../../../domains/retrieval/sources/postgres/copy.ts';
import { flightDataOf, ipcStreamOf } from '../../../../../helpers/flight-frames.ts';

/** Columns of the given names and information_schema types. */
const columns = (named: string[][]) =>
  named.map(([name, type]) => ({ name: name as string, type: type as string, domain: false }));

const TABLE = columns([
  ['i4', 'integer'],
  ['i2', 'smallint'],
  ['i8', 'bigint'],
  ['f8', 'double precision'],
  ['b', 'boolean'],
  ['t', 'text'],
  ['d', 'date'],
  ['ts', 'timestamp with time zone'],
  ['j', 'json'],
  ['e', 'USER-DEFINED'],
]);

const COPY = [
  '1\t-7\t9007199254740993\t1.5\tt\tplain\t2024-02-29\t2024-01-02 03:04:05.123456+00\t{"a":1}\t"happy"',
  '-2147483648\t32767\t-5\t-1e+300\tf\ttab\\there\\nline back\\\\slash ' +
    'ü\t1970-01-01\t1969-12-31 23:59:59+00\t"text \\\\ json"\t"back ' +
    '\\\\\\\\ slash"',
  '\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N',
  '0\t0\t0\tNaN\tt\t\t0001-01-01\tinfinity\t[1,2]\t{"x":1}',
]
  .map((row) => `${row}\n`)
  .join('');

const EXPECTED = [
  {
    i4: 1,
    i2: -7,
    i8: 9007199254740993n,
    f8: 1.5,
    b: true,
    t: 'plain',
    d: Date.UTC(2024, 1, 29),
    ts: 1704164645123.456,
    j: '{"a":1}',
    e: 'happy',
  },
  {
    i4: -2147483648,
    i2: 32767,
    i8: -5n,
    f8: -1e300,
    b: false,
    t: 'tab\there\nline back\\slash ü',
    d: 0,
    ts: Date.UTC(1969, 11, 31, 23, 59, 59),
    j: '"text \\ json"',
    e: 'back \\ slash',
  },
  { i4: null, i2: null, i8: null, f8: null, b: null, t: null, d: null, ts: null, j: null, e: null },
  {
    i4: 0,
    i2: 0,
    i8: 0n,
    f8: Number.NaN,
    b: true,
    t: '',
    d: Date.parse('0001-01-01T00:00:00Z'),
    ts: null,
    j: '[1,2]',
    e: '{"x":1}',
  },
];

function convert(
  chunks: readonly Buffer[],
  batchSize: number,
  selected = TABLE,
): { rows: Record<string, unknown>[]; batches: number } {
  const converter = new CopyArrowConverter(selected.map(arrowCopyColumn), batchSize);
  const messages = [converter.schemaMessage()];
  for (const chunk of chunks) messages.push(...converter.push(chunk));
  const last = converter.end();
  if (last) messages.push(last);
  const table = tableFromIPC(ipcStreamOf(messages.map((m) => flightDataOf(m.frame))));
  return { rows: table.toArray().map((row) => row.toJSON()), batches: table.batches.length };
}

test('every specialised parse and NULL, in batches read back after the buffers were reused', () => {
  const { rows, batches } = convert([Buffer.from(COPY)], 1);
  assert.equal(batches, 4);
  assert.deepEqual(rows, EXPECTED);
});

test('rows split across chunks at every byte give the same batches', () => {
  const bytes = Buffer.from(COPY);
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(convert([bytes.subarray(0, cut), bytes.subarray(cut)], 3).rows, EXPECTED, `cut at ${cut}`);
  }
});

test('a row with too few or too many fields, or past the row limit, fails the read', () => {
  assert.throws(() => convert([Buffer.from('1\t2\n')], 10), /does not have the fields/);
  assert.throws(() => convert([Buffer.from(`${COPY.split('\n')[0]}\textra\n`)], 10), /does not have the fields/);
  const long = `1\t2\t3\t4\tt\t${'x'.repeat(MAX_ROW_BYTES + 1)}\t\\N\t\\N\t\\N\t\\N\n`;
  assert.throws(
    () => convert([Buffer.from(long)], 10),
    (error: { reason?: string }) => error.reason === 'row_too_large',
  );
});

/** COPY text of a text value: backslash, tab and newline escaped as PostgreSQL writes them. */
const copyText = (text: string) => text.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');

test('text, int8 and validity at the edges of the one-pass scans, whole and split at every byte', () => {
  const table = columns([
    ['t', 'text'],
    ['i8', 'bigint'],
    ['b', 'boolean'],
  ]);
  // Text around the length copied while its end is found (64 bytes), escapes first, last and past it, a literal
  // `\N`, multi-byte UTF-8 across that length; int8 at the safe-integer digit count and the type's limits.
  const texts = [
    '',
    'a',
    'x'.repeat(63),
    'x'.repeat(64),
    'x'.repeat(65),
    `${'x'.repeat(64)}\\`,
    `\\${'x'.repeat(70)}`,
    'tab\tend',
    'line\n',
    '\\N',
    'N',
    `${'é'.repeat(31)}ü€😀`,
    null,
  ];
  const int8s = ['0', '-0', '7', '-1', '999999999999999', '-999999999999999', '1000000000000000', '-1000000000000000'];
  int8s.push('9223372036854775807', '-9223372036854775808', '\\N');
  const rows = Array.from({ length: 40 }, (_, i) => ({
    t: texts[i % texts.length] ?? null,
    i8: int8s[i % int8s.length] as string,
    // A first null or false only after a full byte of set bits, then some mixed.
    b: i < 11 ? true : i === 11 ? null : i % 3 === 0,
  }));
  const copy = rows
    .map((r) => `${r.t === null ? '\\N' : copyText(r.t)}\t${r.i8}\t${r.b === null ? '\\N' : r.b ? 't' : 'f'}\n`)
    .join('');
  const expected = rows.map((r) => ({ t: r.t, i8: r.i8 === '\\N' ? null : BigInt(r.i8), b: r.b }));
  const read = (chunks: Buffer[], batchSize: number) => convert(chunks, batchSize, table).rows;
  const bytes = Buffer.from(copy);
  for (const batchSize of [1, 9, 40]) assert.deepEqual(read([bytes], batchSize), expected, `batches of ${batchSize}`);
  for (let cut = 1; cut < bytes.length; cut += 1)
    assert.deepEqual(read([bytes.subarray(0, cut), bytes.subarray(cut)], 16), expected, `cut at ${cut}`);
});
