/**
 * Arrow IPC messages as Flight sends them (Flight.proto `FlightData`): the
 * flatbuffer `Message` as `data_header` and the message body as
 * `data_body`, without the stream format's continuation marker and length
 * prefix (Arrow columnar format, "Encapsulated message format"), each built
 * straight into its gRPC message (flight-data.ts). The body lays each
 * buffer at the offset the header records, 8-byte aligned, zero-padded.
 */
import { type Data, Message, makeData, RecordBatch, type Schema, Struct } from 'apache-arrow';
import { RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message';
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';
import { flightDataFrame } from './flight-data.ts';

export interface IpcMessage {
  /** The FlightData gRPC message (length prefix included) of this IPC message. */
  readonly frame: Buffer;
  readonly rowCount: number;
}

export function schemaMessage(schema: Schema): IpcMessage {
  return { frame: flightDataFrame(Message.encode(Message.from(schema)), 0).frame, rowCount: 0 };
}

/**
 * A record batch of `length` rows from one Data per schema field. The
 * assembler only finds each buffer's place (no copy); each is then copied
 * once, from the column writers' buffers into the gRPC message.
 */
export function batchMessage(schema: Schema, columns: readonly Data[], length: number): IpcMessage {
  const batch = new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length, nullCount: 0, children: [...columns] }),
  );
  const { byteLength, nodes, bufferRegions, buffers, variadicBufferCounts } = VectorAssembler.assemble(batch);
  const header = new RecordBatchHeader(length, nodes, bufferRegions, null, variadicBufferCounts);
  const { frame, bodyAt } = flightDataFrame(Message.encode(Message.from(header, byteLength)), byteLength);
  for (let i = 0; i < buffers.length; i++) {
    const buffer = buffers[i] as ArrayBufferView;
    const region = bufferRegions[i] as { offset: number; length: number };
    const at = bodyAt + region.offset;
    frame.set(new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength), at);
    frame.fill(0, at + buffer.byteLength, at + region.length);
  }
  return { frame, rowCount: length };
}
