/**
 * Arrow IPC messages as Flight sends them (Flight.proto `FlightData`): the
 * flatbuffer `Message` as `data_header` and the message body as
 * `data_body`, without the stream format's continuation marker and length
 * prefix (Arrow columnar format, "Encapsulated message format"). The body
 * lays each buffer at the offset the header records, 8-byte aligned.
 */
import { type Data, Message, makeData, RecordBatch, type Schema, Struct } from 'apache-arrow';
import { RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message';
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';

export interface IpcMessage {
  readonly header: Uint8Array;
  readonly body: Uint8Array;
  readonly rowCount: number;
}

const EMPTY = new Uint8Array(0);

export function schemaMessage(schema: Schema): IpcMessage {
  return { header: Message.encode(Message.from(schema)), body: EMPTY, rowCount: 0 };
}

/** A record batch of `length` rows from one Data per schema field. */
export function batchMessage(schema: Schema, columns: readonly Data[], length: number): IpcMessage {
  const batch = new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length, nullCount: 0, children: [...columns] }),
  );
  const { byteLength, nodes, bufferRegions, buffers, variadicBufferCounts } = VectorAssembler.assemble(batch);
  const header = new RecordBatchHeader(length, nodes, bufferRegions, null, variadicBufferCounts);
  const body = Buffer.alloc(byteLength);
  for (let i = 0; i < buffers.length; i++) {
    const buffer = buffers[i] as ArrayBufferView;
    const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    if (bytes.length > 0) body.set(bytes, (bufferRegions[i] as { offset: number }).offset);
  }
  return { header: Message.encode(Message.from(header, byteLength)), body, rowCount: length };
}
