/**
 * The gateway's hand-written FlightData gRPC messages read back with
 * protobuf-es (the generated Flight.proto code) and apache-arrow: the check
 * that they are the messages Connect would have encoded; and that
 * encoding itself (the peer of bench/retrieval/flight-encode.ts).
 */
import assert from 'node:assert/strict';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { encodeEnvelope } from '@connectrpc/connect/protocol';
import { type Data, Message, makeData, RecordBatch, type Schema, Struct } from 'apache-arrow';
import { RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message';
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';
import { type FlightData, FlightDataSchema } from '../../proto/gen/arrow/flight/protocol/Flight_pb.ts';

/** One gRPC message: flag 0 (not compressed), its length, then a FlightData. */
export function flightDataOf(frame: Uint8Array): FlightData {
  const prefix = Buffer.from(frame.buffer, frame.byteOffset, 5);
  assert.equal(prefix[0], 0, 'compressed flag');
  assert.equal(prefix.readUInt32BE(1), frame.length - 5, 'gRPC length prefix');
  return fromBinary(FlightDataSchema, frame.subarray(5));
}

/** The Arrow IPC stream format around FlightData messages (Arrow columnar format, "IPC Streaming Format"). */
export function ipcStreamOf(messages: readonly Pick<FlightData, 'dataHeader' | 'dataBody'>[]): Uint8Array {
  const parts: Buffer[] = [];
  for (const { dataHeader, dataBody } of messages) {
    const padded = (dataHeader.length + 7) & ~7;
    const prefix = Buffer.alloc(8);
    prefix.writeInt32LE(-1, 0);
    prefix.writeInt32LE(padded, 4);
    parts.push(prefix, Buffer.concat([dataHeader, Buffer.alloc(padded - dataHeader.length)]), Buffer.from(dataBody));
  }
  return Buffer.concat(parts);
}

/** The record batch as apache-arrow assembled it into a zeroed body, encoded by protobuf-es in Connect's envelope. */
export function connectEncodedBatch(schema: Schema, columns: readonly Data[], length: number): Uint8Array {
  const batch = new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length, children: [...columns] }));
  const { byteLength, nodes, bufferRegions, buffers, variadicBufferCounts } = VectorAssembler.assemble(batch);
  const body = Buffer.alloc(byteLength);
  buffers.forEach((buffer, i) => {
    body.set(new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength), bufferRegions[i]?.offset);
  });
  const header = Message.encode(
    Message.from(new RecordBatchHeader(length, nodes, bufferRegions, null, variadicBufferCounts), byteLength),
  );
  return encodeEnvelope(
    0,
    toBinary(FlightDataSchema, create(FlightDataSchema, { dataHeader: header, dataBody: body })),
  );
}
