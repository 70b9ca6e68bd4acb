/**
 * Binary COPY → Arrow record batches (domains/retrieval/sources/postgres/arrow.ts),
 * read back with apache-arrow's own IPC reader: every decoder (int2/4/8 past
 * 2^53, float4/8 with NaN, bool, text and bytea of every length, dates and
 * timestamps on both sides of both epochs, ±infinity, json text and a JSON
 * string of a type selected as to_json) and NULL, tuples split across chunks at every byte, batches intact
 * after the converter reused its buffers, what each column is selected as,
 * and malformed, truncated or oversized data refused.
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
  ['i2', 'smallint'],
  ['i4', 'integer'],
  ['i8', 'bigint'],
  ['f4', 'real'],
  ['f8', 'double precision'],
  ['b', 'boolean'],
  ['t', 'text'],
  ['raw', 'bytea'],
  ['d', 'date'],
  ['ts', 'timestamp with time zone'],
  ['j', 'USER-DEFINED'],
]);

type Field = Buffer | null;
const int = (bytes: number, value: number | bigint): Buffer => {
  const out = Buffer.alloc(bytes);
  if (bytes === 2) out.writeInt16BE(Number(value));
  else if (bytes === 4) out.writeInt32BE(Number(value));
  else out.writeBigInt64BE(BigInt(value));
  return out;
};
const float = (bytes: 4 | 8, value: number) => {
  const out = Buffer.alloc(bytes);
  if (bytes === 4) out.writeFloatBE(value);
  else out.writeDoubleBE(value);
  return out;
};
const text = (value: string) => Buffer.from(value);
/** Days and microseconds since PostgreSQL's epoch, 2000-01-01. */
const PG_EPOCH_MS = Date.UTC(2000, 0, 1);
const day = (iso: string) => int(4, (Date.parse(iso) - PG_EPOCH_MS) / 86_400_000);
const micros = (iso: string, extra = 0n) => int(8, BigInt(Date.parse(iso) - PG_EPOCH_MS) * 1000n + extra);

/** Binary COPY output (PostgreSQL manual, COPY "Binary Format"): signature, flags, an extension, tuples, trailer. */
function binaryCopy(tuples: readonly Field[][], extension = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(8);
  head.writeInt32BE(extension.length, 4);
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), head, extension];
  for (const tuple of tuples) {
    parts.push(int(2, tuple.length));
    for (const field of tuple) parts.push(int(4, field === null ? -1 : field.length), field ?? Buffer.alloc(0));
  }
  parts.push(int(2, -1));
  return Buffer.concat(parts);
}

const LONG = 'ü'.repeat(100);
const TUPLES: Field[][] = [
  [
    int(2, -7),
    int(4, 1),
    int(8, 9007199254740993n),
    float(4, 1.5),
    float(8, -0.25),
    Buffer.from([1]),
    text('plain'),
    Buffer.from([0, 0xff, 0x0a]),
    day('2024-02-29'),
    micros('2024-01-02T03:04:05.123Z', 456n),
    text('{"a":1}'),
  ],
  [
    int(2, 32767),
    int(4, -2147483648),
    int(8, -9223372036854775808n),
    float(4, Number.NaN),
    float(8, -1e300),
    Buffer.from([0]),
    text(LONG),
    Buffer.alloc(0),
    day('1969-12-31'),
    micros('1969-12-31T23:59:59Z'),
    text('"a \\"json\\" string"'),
  ],
  TABLE.map(() => null),
  [
    int(2, 0),
    int(4, 0),
    int(8, 0),
    float(4, 0),
    float(8, 0),
    Buffer.from([1]),
    text(''),
    Buffer.from(LONG),
    day('0001-01-01'),
    int(8, 0x7fffffffffffffffn),
    text('[1,2]'),
  ],
  [
    int(2, 1),
    int(4, 1),
    int(8, -1),
    float(4, 1),
    float(8, 1),
    Buffer.from([1]),
    text('x'),
    Buffer.from('x'),
    int(4, 0x7fffffff),
    int(8, -0x8000000000000000n),
    text('null'),
  ],
];

const EXPECTED = [
  {
    i2: -7,
    i4: 1,
    i8: 9007199254740993n,
    f4: 1.5,
    f8: -0.25,
    b: true,
    t: 'plain',
    raw: Uint8Array.from([0, 0xff, 0x0a]),
    d: Date.UTC(2024, 1, 29),
    ts: 1704164645123.456,
    j: '{"a":1}',
  },
  {
    i2: 32767,
    i4: -2147483648,
    i8: -9223372036854775808n,
    f4: Number.NaN,
    f8: -1e300,
    b: false,
    t: LONG,
    raw: new Uint8Array(0),
    d: Date.UTC(1969, 11, 31),
    ts: Date.UTC(1969, 11, 31, 23, 59, 59),
    j: 'a "json" string',
  },
  Object.fromEntries(TABLE.map((c) => [c.name, null])),
  {
    i2: 0,
    i4: 0,
    i8: 0n,
    f4: 0,
    f8: 0,
    b: true,
    t: '',
    raw: Uint8Array.from(Buffer.from(LONG)),
    d: Date.parse('0001-01-01T00:00:00Z'),
    ts: null,
    j: '[1,2]',
  },
  { i2: 1, i4: 1, i8: -1n, f4: 1, f8: 1, b: true, t: 'x', raw: Uint8Array.from([0x78]), d: null, ts: null, j: 'null' },
];

function convert(chunks: readonly Buffer[], batchSize: number): { rows: Record<string, unknown>[]; batches: number } {
  const converter = new CopyArrowConverter(TABLE.map(arrowCopyColumn), batchSize);
  const messages = [converter.schemaMessage()];
  for (const chunk of chunks) messages.push(...converter.push(chunk));
  const last = converter.end();
  if (last) messages.push(last);
  const table = tableFromIPC(ipcStreamOf(messages.map((m) => flightDataOf(m.frame))));
  const rows = table.toArray().map((row) => {
    const plain = row.toJSON();
    // Arrow's binary vectors are views into the message body: copied to compare by value.
    return { ...plain, raw: plain.raw === null ? null : Uint8Array.from(plain.raw) };
  });
  return { rows, batches: table.batches.length };
}

test('every decoder and NULL, in batches read back after the buffers were reused', () => {
  const { rows, batches } = convert([binaryCopy(TUPLES, Buffer.from('ext'))], 2);
  assert.equal(batches, 3);
  assert.deepEqual(rows, EXPECTED);
});

test('tuples split across chunks at every byte give the same rows', () => {
  const bytes = binaryCopy(TUPLES);
  for (let cut = 1; cut < bytes.length; cut++)
    assert.deepEqual(convert([bytes.subarray(0, cut), bytes.subarray(cut)], 3).rows, EXPECTED, `cut at ${cut}`);
});

test('tuples cut across many chunks, one longer than the carry grows to at once, give the same rows', () => {
  // The carry is one buffer a read keeps and grows: a tuple that outlasts several chunks, a chunk wholly inside
  // one, and the short tuples after a long one must all come out whole (multi-byte text cut inside a character too).
  const wide = '€😀'.repeat(12_000);
  const [first, second, nulls, empties, last] = TUPLES as [Field[], Field[], Field[], Field[], Field[]];
  const longTuple = [...first.slice(0, 6), text(wide), Buffer.from(wide), ...first.slice(8)];
  const tuples = [first, longTuple, nulls, empties, longTuple, second, last, nulls, longTuple, empties];
  const longRow = { ...EXPECTED[0], t: wide, raw: Uint8Array.from(Buffer.from(wide)) };
  const expected = tuples.map((tuple) => (tuple === longTuple ? longRow : EXPECTED[TUPLES.indexOf(tuple)]));
  const bytes = binaryCopy(tuples);
  for (const size of [1, 3, 4096, 4099, 40_000, 70_000]) {
    const chunks = Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) =>
      bytes.subarray(i * size, (i + 1) * size),
    );
    assert.deepEqual(convert(chunks, 4).rows, expected, `${size}-byte chunks`);
  }
});

test('each column is selected as what its binary form decodes: itself, its text, or its JSON', () => {
  const selected = columns([
    ['t', 'text'],
    ['v', 'character varying'],
    ['n', 'numeric'],
    ['u', 'uuid'],
    ['jb', 'jsonb'],
    ['iv', 'interval'],
    ['arr', 'ARRAY'],
    ['i', 'integer'],
  ]).map(arrowCopyColumn);
  assert.deepEqual(
    selected.map((c) => [c.name, c.json, c.asText]),
    [
      ['t', false, false],
      ['v', false, false],
      ['n', false, true],
      ['u', false, true],
      ['jb', false, true],
      ['iv', true, false],
      ['arr', true, false],
      ['i', false, false],
    ],
  );
});

test('malformed, truncated or oversized binary COPY data fails the read', () => {
  const [first] = TUPLES as [Field[]];
  assert.throws(() => convert([Buffer.from('1\t2\t3\t4\t5\t6\t7\t8\t9\t10\n')], 10), /not binary COPY data/);
  assert.throws(() => convert([binaryCopy([first.slice(1)])], 10), /does not have the fields/);
  assert.throws(() => convert([binaryCopy([[int(4, 1), ...first.slice(1)]])], 10), /does not have the fields/);
  const whole = binaryCopy([first]);
  assert.throws(() => convert([whole.subarray(0, whole.length - 2)], 10), /ended inside a tuple/);
  const long = binaryCopy([[...first.slice(0, 6), Buffer.alloc(MAX_ROW_BYTES + 1), ...first.slice(7)]]);
  for (const chunks of [[long], [long.subarray(0, 1000), long.subarray(1000)]])
    assert.throws(
      () => convert(chunks, 10),
      (error: { reason?: string }) => error.reason === 'row_too_large',
    );
});
