/**
 * The gateway's hand-written FlightData gRPC messages read back with
 * protobuf-es (the generated Flight.proto code) and apache-arrow: the check
 * that they are the messages Connect would have encoded.
 */
import assert from 'node:assert/strict';
import { fromBinary } from '@bufbuild/protobuf';
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
