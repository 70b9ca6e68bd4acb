/**
 * `COPY (SELECT …) TO STDOUT (FORMAT binary)` straight into Arrow column
 * buffers (the Flight throughput path, docs/retrieval.md "Throughput
 * choices"; PostgreSQL manual, COPY "Binary Format"): each field is its
 * 32-bit length and the type's send form, big-endian. A fixed-width field
 * (int2/4/8, float4/8, bool, date, timestamp) is byte-swapped into the
 * column's typed array, a text or bytea field is copied into the column's
 * value bytes with its offset, and a NULL (length -1) is a validity bit; no
 * text is parsed and no row object or string is made. Types whose send
 * form is not their text are selected as text (`::text`: numeric, uuid,
 * jsonb), and a type without a precise Arrow type as `to_json(col)` (sent
 * as that JSON's text, a JSON string as the string itself): the values a
 * gated stream's row path gives for them.
 */
import { Schema } from 'apache-arrow';
import { batchMessage, type IpcMessage, schemaMessage } from '../../arrow/ipc.ts';
import { declaredType, PG_JSON_RENDERED } from '../../arrow/mapping.ts';
import { arrowField, type ColumnType, UTF8 } from '../../arrow/types.ts';
import type { BytesWriter, ColumnWriter, NumberWriter, WideWriter } from '../../arrow/writers.ts';
import { columnWriter } from '../../arrow/writers.ts';
import { RetrievalErrors } from '../../errors.ts';
import type { PgColumn } from './catalog.ts';
import { type CopyReader, MAX_ROW_BYTES } from './copy.ts';

export interface ArrowCopyColumn {
  readonly name: string;
  readonly type: ColumnType;
  /** Selected as `to_json(col)`: the column's type has no precise Arrow type. */
  readonly json: boolean;
  /** Selected as `col::text`: an Arrow utf8 column whose binary send form is not its text. */
  readonly asText: boolean;
}

/** Types whose binary send form is their text's UTF-8 bytes (textsend, bpcharsend, namesend, json_send). */
const SENT_AS_TEXT = new Set(['text', 'character varying', 'character', 'name', 'json']);

export function arrowCopyColumn(column: PgColumn): ArrowCopyColumn {
  const type = declaredType(column.type);
  const json = type === null || PG_JSON_RENDERED.has(column.type);
  const asText = !json && type.kind === 'utf8' && !SENT_AS_TEXT.has(column.type);
  return { name: column.name, type: type ?? UTF8, json, asText };
}

/** The binary COPY header: signature, flags, header extension length (then the extension). */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const HEADER_BYTES = SIGNATURE.length + 8;
const QUOTE = 0x22;
/** Bytes of the next chunk first joined to a carried tuple's start; grown eightfold while the tuple goes on. */
const CARRY_STEP = 4096;
/** The most the carry's buffer keeps between tuples: one grown for a rare huge tuple is let go. */
const CARRY_KEPT_BYTES = 1 << 20;
const EMPTY = Buffer.alloc(0);
/** PostgreSQL's date and timestamp epoch, 2000-01-01, from Arrow's (1970-01-01): in days and in microseconds. */
const EPOCH_DAYS = 10_957;
const EPOCH_MICROS = EPOCH_DAYS * 86_400_000_000;
const TWO_32 = 2 ** 32;
const EPOCH_HIGH = Math.floor(EPOCH_MICROS / TWO_32);
const EPOCH_LOW = EPOCH_MICROS - EPOCH_HIGH * TWO_32;
/** `infinity` and `-infinity` of a date (int32) and of a timestamp (int64, its high word): sent as null. */
const INT32_MAX = 0x7fffffff;
const INT32_MIN = -0x80000000;

/** How a column's field is decoded: one `switch` arm each, so no call per field goes through a closure. */
const INT16 = 0;
const INT32 = 1;
const INT64 = 2;
const FLOAT32 = 3;
const FLOAT64 = 4;
const BOOLEAN = 5;
const DAY = 6;
const TIMESTAMP = 7;
const BYTES = 8;
const JSON_TEXT = 9;

/** The field width each fixed-width kind's send form has; a field of another length is refused. */
const WIDTH = [2, 4, 8, 4, 8, 1, 4, 8];

function decodeKind(column: ArrowCopyColumn): number {
  if (column.json) return JSON_TEXT;
  const { type } = column;
  if (type.kind === 'int') return type.bits === 16 ? INT16 : type.bits === 32 ? INT32 : INT64;
  if (type.kind === 'float') return type.bits === 32 ? FLOAT32 : FLOAT64;
  const kinds: Partial<Record<ColumnType['kind'], number>> = {
    bool: BOOLEAN,
    date: DAY,
    timestamp: TIMESTAMP,
    utf8: BYTES,
    binary: BYTES,
  };
  const kind = kinds[type.kind];
  if (kind === undefined) throw new TypeError(`no binary COPY decoder for Arrow ${type.kind}`);
  return kind;
}

const malformed = () => new Error('binary COPY data does not have the fields the SELECT names');

/**
 * Binary COPY tuples → Arrow record batches of at most `batchSize` rows.
 * A tuple a chunk ends inside is kept (at most MAX_ROW_BYTES) and completed
 * by the next; a tuple is decoded only once it is whole, after one walk over
 * its field lengths. Column buffers are kept from batch to batch.
 */
export class CopyArrowConverter implements CopyReader<IpcMessage> {
  readonly schema: Schema;
  readonly #writers: ColumnWriter[];
  readonly #kinds: number[];
  readonly #batchSize: number;
  /** Each field's start (its bytes, past the length) and length (-1: NULL) in the tuple being decoded. */
  readonly #starts: Int32Array;
  readonly #lengths: Int32Array;
  #rows = 0;
  /**
   * The start of a tuple a chunk ended inside: its first #carried bytes. One buffer for the whole read, grown
   * only for a longer tuple (a new buffer a chunk was most of what the decoder allocated), and let go after a tuple
   * that grew it past CARRY_KEPT_BYTES.
   */
  #carry: Buffer = EMPTY;
  #carried = 0;
  #headerRead = false;
  #trailerRead = false;

  constructor(columns: readonly ArrowCopyColumn[], batchSize: number) {
    this.schema = new Schema(columns.map(arrowField));
    this.#writers = columns.map((c) => columnWriter(c.type));
    this.#kinds = columns.map(decodeKind);
    this.#batchSize = batchSize;
    this.#starts = new Int32Array(columns.length);
    this.#lengths = new Int32Array(columns.length);
  }

  push(chunk: Buffer, done: IpcMessage[] = []): IpcMessage[] {
    const from = this.#carried > 0 ? this.#completeCarry(chunk, done) : 0;
    if (from < 0) return done;
    const end = this.#decodeFrom(chunk, from, done);
    if (end < chunk.length && !this.#trailerRead) this.#keep(chunk.subarray(end));
    return done;
  }

  /** Decodes src from p on (the header first, until it has been read); returns where its whole tuples end. */
  #decodeFrom(src: Buffer, p: number, done: IpcMessage[]): number {
    if (this.#headerRead) return this.#tuples(src, p, done);
    const start = this.#header(src, p);
    return start < 0 ? p : this.#tuples(src, start, done);
  }

  /**
   * The carried start of a tuple joined with only as much of the chunk as ends it (a chunk is not copied
   * whole for the few bytes it adds), in the carry's own buffer; returns where the rest of the chunk starts, or
   * -1 when the chunk ended first and all of it is carried.
   */
  #completeCarry(chunk: Buffer, done: IpcMessage[]): number {
    for (let take = Math.min(chunk.length, CARRY_STEP); ; take = Math.min(chunk.length, take * 8)) {
      const carried = this.#carried;
      const joined = carried + take;
      const head = this.#room(joined);
      head.set(chunk.subarray(0, take), carried);
      this.#carried = 0;
      const end = this.#decodeFrom(head.subarray(0, joined), 0, done);
      if (this.#trailerRead || end >= carried) {
        // A buffer grown for one huge tuple is not kept for the rest of the read (up to twice the row limit).
        if (this.#carry.length > CARRY_KEPT_BYTES) this.#carry = EMPTY;
        return Math.max(end - carried, 0);
      }
      // Still inside the tuple: what is left of it moves to the buffer's start (with all of the chunk when the
      // chunk ended first), else more of the chunk is joined.
      if (take === chunk.length) {
        head.copyWithin(0, end, joined);
        this.#carried = this.#checked(joined - end);
        return -1;
      }
      head.copyWithin(0, end, carried);
      this.#carried = carried - end;
    }
  }

  /** Keeps the start of a tuple a chunk ended inside (a copy: the chunk's buffer is not held). */
  #keep(piece: Buffer): void {
    this.#room(this.#checked(piece.length)).set(piece);
    this.#carried = piece.length;
  }

  #checked(carried: number): number {
    if (carried > MAX_ROW_BYTES) throw RetrievalErrors.make.row_too_large({ max_row_bytes: MAX_ROW_BYTES });
    return carried;
  }

  /** The carry's buffer with room for `bytes`, its first #carried bytes kept; made and grown only when short. */
  #room(bytes: number): Buffer {
    if (this.#carry.length < bytes) {
      const bigger = Buffer.allocUnsafe(Math.max(bytes, this.#carry.length * 2, CARRY_STEP * 2));
      this.#carry.copy(bigger, 0, 0, this.#carried);
      this.#carry = bigger;
    }
    return this.#carry;
  }

  /** Decodes the whole tuples from p on, closing each batch that fills into `done`; returns where they end. */
  #tuples(src: Buffer, from: number, done: IpcMessage[]): number {
    let p = from;
    while (p < src.length && !this.#trailerRead) {
      const end = this.#tuple(src, p);
      if (end < 0) break;
      if (!this.#trailerRead) {
        this.#decode(src);
        if (++this.#rows === this.#batchSize) done.push(this.#batch());
      }
      p = end;
    }
    return p;
  }

  /** The last, partial batch (null when there is none); throws if the data ended inside a tuple or before its end. */
  end(): IpcMessage | null {
    if (this.#carried > 0 || !this.#trailerRead) throw new Error('binary COPY data ended inside a tuple');
    return this.#rows > 0 ? this.#batch() : null;
  }

  /** Where the tuples start after the header at p, or -1 while the header is not whole. */
  #header(src: Buffer, p: number): number {
    if (src.length - p < HEADER_BYTES) return -1;
    if (!src.subarray(p, p + SIGNATURE.length).equals(SIGNATURE)) throw new Error('not binary COPY data');
    const start = p + HEADER_BYTES + int32At(src, p + SIGNATURE.length + 4);
    if (src.length < start) return -1;
    this.#headerRead = true;
    return start;
  }

  /**
   * The end of the tuple at p with each field's start and length noted, or -1 when the chunk ends inside it.
   * The trailer (a field count of -1) ends the data.
   */
  #tuple(src: Buffer, p: number): number {
    if (p + 2 > src.length) return -1;
    const fields = (((src[p] as number) << 24) >> 16) | (src[p + 1] as number);
    if (fields === -1) {
      this.#trailerRead = true;
      return p + 2;
    }
    if (fields !== this.#kinds.length) throw malformed();
    let q = p + 2;
    for (let f = 0; f < fields; f++) {
      if (q + 4 > src.length) return -1;
      const length =
        ((src[q] as number) << 24) |
        ((src[q + 1] as number) << 16) |
        ((src[q + 2] as number) << 8) |
        (src[q + 3] as number);
      q += 4;
      this.#starts[f] = q;
      this.#lengths[f] = length;
      if (length > 0) q += length;
      if (q > src.length) return -1;
    }
    if (q - p > MAX_ROW_BYTES) throw RetrievalErrors.make.row_too_large({ max_row_bytes: MAX_ROW_BYTES });
    return q;
  }

  /** Appends the noted tuple's fields to their columns. */
  #decode(src: Buffer): void {
    // Held in locals: the loop runs once a field, and a private field's load is not free.
    const writers = this.#writers;
    const kinds = this.#kinds;
    const starts = this.#starts;
    const lengths = this.#lengths;
    for (let f = 0; f < kinds.length; f++) {
      const writer = writers[f] as ColumnWriter;
      const length = lengths[f] as number;
      if (length < 0) {
        writer.push(null);
        continue;
      }
      const kind = kinds[f] as number;
      if (kind < BYTES && length !== WIDTH[kind]) throw malformed();
      decodeField(src, starts[f] as number, length, writer, kind);
    }
  }

  #batch(): IpcMessage {
    const message = batchMessage(
      this.schema,
      this.#writers.map((w) => w.finish()),
      this.#rows,
    );
    this.#rows = 0;
    return message;
  }

  /** The schema message, sent before the first batch. */
  schemaMessage(): IpcMessage {
    return schemaMessage(this.schema);
  }
}

/** The big-endian 32-bit signed integer at p. */
const int32At = (src: Buffer, p: number): number =>
  ((src[p] as number) << 24) | ((src[p + 1] as number) << 16) | ((src[p + 2] as number) << 8) | (src[p + 3] as number);

function decodeField(src: Buffer, p: number, length: number, writer: ColumnWriter, kind: number): void {
  switch (kind) {
    case INT16:
      (writer as NumberWriter).pushRaw((((src[p] as number) << 24) >> 16) | (src[p + 1] as number));
      break;
    case INT32:
      (writer as NumberWriter).pushRaw(int32At(src, p));
      break;
    case FLOAT32:
      (writer as NumberWriter).pushRaw(src.readFloatBE(p));
      break;
    case FLOAT64:
      (writer as NumberWriter).pushRaw(src.readDoubleBE(p));
      break;
    case BOOLEAN:
      writer.push(src[p] !== 0);
      break;
    case INT64:
      (writer as WideWriter).pushWords(int32At(src, p + 4) >>> 0, int32At(src, p));
      break;
    case DAY: {
      const days = int32At(src, p);
      (writer as NumberWriter).pushRaw(days === INT32_MAX || days === INT32_MIN ? null : days + EPOCH_DAYS);
      break;
    }
    case TIMESTAMP:
      pushTimestamp(writer as WideWriter, int32At(src, p), int32At(src, p + 4) >>> 0);
      break;
    // to_json of a text-like value is a JSON string: the string itself, as the row path gives it.
    case JSON_TEXT:
      if (src[p] === QUOTE) writer.push(JSON.parse(src.toString('utf8', p, p + length)));
      else appendBytes(writer as BytesWriter, src, p, length);
      break;
    default:
      appendBytes(writer as BytesWriter, src, p, length);
  }
}

/**
 * A value up to this many bytes is copied by a byte loop: a native copy's
 * call and the view it takes cost more than the few bytes of a short text.
 */
const SHORT_BYTES = 64;

function appendBytes(writer: BytesWriter, src: Buffer, p: number, length: number): void {
  if (length > SHORT_BYTES) writer.appendBytes(src, p, p + length);
  else {
    const out = writer.reserve(length);
    let o = writer.end;
    for (let k = p, stop = p + length; k < stop; k++) out[o++] = src[k] as number;
    writer.end = o;
  }
  writer.close(true);
}

/**
 * Microseconds since 2000-01-01 (high word signed, low unsigned) moved to 1970-01-01, with the carry;
 * ±infinity is null.
 */
function pushTimestamp(writer: WideWriter, high: number, low: number): void {
  if ((high === INT32_MAX && low === 0xffffffff) || (high === INT32_MIN && low === 0)) {
    writer.push(null);
    return;
  }
  const sum = low + EPOCH_LOW;
  const carry = sum >= TWO_32 ? 1 : 0;
  writer.pushWords(sum - carry * TWO_32, (high + EPOCH_HIGH + carry) | 0);
}
