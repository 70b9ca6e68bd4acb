/**
 * The hand-written FlightData gRPC messages (domains/retrieval/arrow/
 * flight-data.ts, ipc.ts) against the way they were made before: the
 * record batch laid out by apache-arrow's VectorAssembler into a zeroed
 * body, the FlightData encoded by protobuf-es (as Connect does) and put in
 * Connect's gRPC envelope. For the same rows of every column type, with and
 * without nulls and over more than one batch of reused writer buffers, the
 * bytes are the same; read back, the record batches hold the rows pushed;
 * app_metadata added after the batch decodes beside the same header and body.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create, toBinary } from '@bufbuild/protobuf';
import { encodeEnvelope } from '@connectrpc/connect/protocol';
import { Message, Schema, tableFromIPC } from 'apache-arrow';
import { metadataFrame, withAppMetadata } from '../../../../../domains/retrieval/arrow/flight-data.ts';
import { batchMessage, schemaMessage } from '../../../../../domains/retrieval/arrow/ipc.ts';
import { arrowField, type NamedType } from '../../../../../domains/retrieval/arrow/types.ts';
import { columnWriter } from '../../../../../domains/retrieval/arrow/writers.ts';
import { FlightDataSchema } from '../../../../../proto/gen/arrow/flight/protocol/Flight_pb.ts';
import { connectEncodedBatch, flightDataOf, ipcStreamOf } from '../../../../helpers/flight-frames.ts';

const COLUMNS: readonly NamedType[] = [
  { name: 'i8', type: { kind: 'int', bits: 8 } },
  { name: 'i16', type: { kind: 'int', bits: 16 } },
  { name: 'i32', type: { kind: 'int', bits: 32 } },
  { name: 'i64', type: { kind: 'int', bits: 64 } },
  { name: 'f32', type: { kind: 'float', bits: 32 } },
  { name: 'f64', type: { kind: 'float', bits: 64 } },
  { name: 'flag', type: { kind: 'bool' } },
  { name: 'text', type: { kind: 'utf8' } },
  { name: 'blob', type: { kind: 'binary' } },
  { name: 'day', type: { kind: 'date' } },
  { name: 'at', type: { kind: 'timestamp', zone: 'UTC' } },
  { name: 'amount', type: { kind: 'decimal', precision: 12, scale: 2 } },
  { name: 'tags', type: { kind: 'list', item: { kind: 'utf8' } } },
  {
    name: 'point',
    type: {
      kind: 'struct',
      fields: [
        { name: 'x', type: { kind: 'int', bits: 32 } },
        { name: 'label', type: { kind: 'utf8' } },
      ],
    },
  },
];

/** Row i's value of every column; every fifth row of `withNulls` is all null. */
function row(i: number, withNulls: boolean): unknown[] {
  if (withNulls && i % 5 === 0) return COLUMNS.map(() => null);
  return [
    (i % 200) - 100,
    i * 7 - 30_000,
    i * 1_000_003,
    `${9_007_199_254_740_993n + BigInt(i)}`,
    i / 4,
    i * 1.5 - 0.25,
    i % 3 === 0,
    `text ${i} ${'é'.repeat(i % 4)}`,
    Buffer.from([i & 0xff, 1, 2].slice(0, 1 + (i % 3))),
    `2024-02-${String(1 + (i % 28)).padStart(2, '0')}`,
    `2024-02-03T04:05:06.${String(i).padStart(6, '0')}Z`,
    `${i}.${String(i % 100).padStart(2, '0')}`,
    Array.from({ length: i % 3 }, (_, k) => `t${k}`),
    { x: i, label: `p${i}` },
  ];
}

test('every column type, with and without nulls, in reused buffers: the bytes Connect encoded, the rows pushed', () => {
  const schema = new Schema(COLUMNS.map(arrowField));
  const writers = COLUMNS.map((c) => columnWriter(c.type));
  const schemaFrame = schemaMessage(schema).frame;
  assert.deepEqual(
    schemaFrame,
    Buffer.from(
      encodeEnvelope(
        0,
        toBinary(FlightDataSchema, create(FlightDataSchema, { dataHeader: Message.encode(Message.from(schema)) })),
      ),
    ),
  );
  const frames = [schemaFrame];
  for (const [length, withNulls] of [
    [37, false],
    [1, true],
    [1000, true],
    [3, false],
  ] as const) {
    const rows = Array.from({ length }, (_, i) => row(i, withNulls));
    writers.forEach((w, c) => {
      for (const values of rows) w.push(values[c]);
    });
    const columns = writers.map((w) => w.finish());
    const message = batchMessage(schema, columns, length);
    assert.equal(message.rowCount, length);
    assert.deepEqual(message.frame, Buffer.from(connectEncodedBatch(schema, columns, length)), `${length} rows`);
    frames.push(message.frame);
  }
  const table = tableFromIPC(ipcStreamOf(frames.map(flightDataOf)));
  assert.deepEqual(
    table.batches.map((b) => b.numRows),
    [37, 1, 1000, 3],
  );
  const got = table.toArray().map((r) => r.toJSON());
  assert.deepEqual(got[0]?.text, 'text 0 ');
  assert.equal(got[37]?.i32, null);
  assert.equal(got[38]?.i64, null);
  assert.equal(got[39]?.i64, 9_007_199_254_740_994n);
  assert.deepEqual([...(got[40]?.tags ?? [])], ['t0', 't1']);
  assert.deepEqual(got[41]?.point?.toJSON(), { x: 3, label: 'p3' });
  assert.deepEqual([...(got[1 + 1000 + 37 + 1]?.blob ?? [])], [1, 1]);
});

test('app_metadata after the batch decodes beside the same header and body; a metadata-only message as Connect', () => {
  const schema = new Schema([arrowField({ name: 'n', type: { kind: 'int', bits: 32 } })]);
  const writer = columnWriter({ kind: 'int', bits: 32 });
  for (let i = 0; i < 300; i++) writer.push(i);
  const { frame } = batchMessage(schema, [writer.finish()], 300);
  const metadata = Buffer.from(JSON.stringify({ gate_audit: { filtered: true }, filtered: true }));
  const plain = flightDataOf(frame);
  const tagged = flightDataOf(withAppMetadata(frame, metadata));
  assert.deepEqual(tagged.dataHeader, plain.dataHeader);
  assert.deepEqual(tagged.dataBody, plain.dataBody);
  assert.deepEqual(Buffer.from(tagged.appMetadata), metadata);
  assert.equal(withAppMetadata(frame, new Uint8Array(0)), frame);
  assert.deepEqual(
    metadataFrame(metadata),
    Buffer.from(encodeEnvelope(0, toBinary(FlightDataSchema, create(FlightDataSchema, { appMetadata: metadata })))),
  );
  // A body past 2^14 bytes has a three-byte length varint, past 2^21 four.
  for (const rows of [5000, 600_000]) {
    for (let i = 0; i < rows; i++) writer.push(i);
    const big = batchMessage(schema, [writer.finish()], rows).frame;
    assert.equal(flightDataOf(big).dataBody.length, rows * 4);
  }
});
