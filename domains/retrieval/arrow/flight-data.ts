/**
 * Flight.proto `FlightData` written by hand, each as one gRPC message ready
 * for the wire: the 5-byte gRPC length prefix (flag 0: not compressed;
 * gRPC over HTTP/2, "Length-Prefixed-Message"), then the protobuf fields
 * (https://protobuf.dev/programming-guides/encoding/): 2 `data_header`,
 * 1000 `data_body`, and 3 `app_metadata` when there is any, each a tag, a
 * varint length and the bytes. The record batch body is laid into the same
 * buffer by its builder (ipc.ts), so it is copied once between the column
 * buffers and the socket. Protobuf readers accept fields in any order, so
 * the metadata a transport adds after the batch was built goes last.
 */

/** The gRPC length prefix: one flag byte, then the message length as a 32-bit big-endian integer. */
const GRPC_PREFIX = 5;
/** (field number << 3) | wire type 2 (length-delimited), as varints. */
const DATA_HEADER_TAG = [0x12];
const APP_METADATA_TAG = [0x1a];
const DATA_BODY_TAG = [0xc2, 0x3e];

function varintLength(n: number): number {
  let bytes = 1;
  for (let v = n; v >= 0x80; v = Math.floor(v / 0x80)) bytes++;
  return bytes;
}

function writeVarint(out: Buffer, at: number, n: number): number {
  let v = n;
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[at++] = v;
  return at;
}

/** Bytes of one length-delimited field holding `length` bytes; none when it is empty (proto3 leaves it out). */
const fieldLength = (tag: readonly number[], length: number) =>
  length === 0 ? 0 : tag.length + varintLength(length) + length;

/** Writes the tag and length of a field holding `length` bytes at `at`; returns where its bytes go. */
function fieldHead(out: Buffer, at: number, tag: readonly number[], length: number): number {
  if (length === 0) return at;
  for (const byte of tag) out[at++] = byte;
  return writeVarint(out, at, length);
}

export interface FlightDataFrame {
  /** The whole gRPC message: prefix and FlightData. */
  readonly frame: Buffer;
  /** Where `data_body`'s bytes start in `frame`, for the caller to fill. */
  readonly bodyAt: number;
}

/**
 * A FlightData gRPC message with `header` written and room for a body of
 * `bodyLength` bytes at `bodyAt`. Allocated without zeroing: the caller
 * writes every byte of the body, padding included.
 */
export function flightDataFrame(header: Uint8Array, bodyLength: number): FlightDataFrame {
  const messageLength = fieldLength(DATA_HEADER_TAG, header.length) + fieldLength(DATA_BODY_TAG, bodyLength);
  const frame = Buffer.allocUnsafe(GRPC_PREFIX + messageLength);
  frame[0] = 0;
  frame.writeUInt32BE(messageLength, 1);
  const headerAt = fieldHead(frame, GRPC_PREFIX, DATA_HEADER_TAG, header.length);
  frame.set(header, headerAt);
  const bodyAt = fieldHead(frame, headerAt + header.length, DATA_BODY_TAG, bodyLength);
  return { frame, bodyAt };
}

/** The frame with `app_metadata` added (a new buffer); the frame itself when the metadata is empty. */
export function withAppMetadata(frame: Buffer, metadata: Uint8Array): Buffer {
  if (metadata.length === 0) return frame;
  const out = Buffer.allocUnsafe(frame.length + fieldLength(APP_METADATA_TAG, metadata.length));
  frame.copy(out);
  out.set(metadata, fieldHead(out, frame.length, APP_METADATA_TAG, metadata.length));
  out.writeUInt32BE(out.length - GRPC_PREFIX, 1);
  return out;
}

/** A FlightData of `app_metadata` alone (Flight's metadata-only message). */
export function metadataFrame(metadata: Uint8Array): Buffer {
  return withAppMetadata(flightDataFrame(new Uint8Array(0), 0).frame, metadata);
}
