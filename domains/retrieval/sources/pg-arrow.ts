/**
 * `COPY (SELECT …) TO STDOUT` text rows straight into Arrow column buffers
 * (the Flight throughput path, docs/retrieval.md "Throughput choices"): an
 * integer, float, boolean, date or timestamp field is parsed from its bytes
 * into the column's typed array, a text field is unescaped into the
 * column's value bytes; no row object and, for those types, no string is
 * made. A type without a precise Arrow type is selected as `to_json(col)`
 * and sent as that JSON's text (a JSON string as the string itself), the
 * text a gated stream's row path gives for it. COPY text format: pg-copy.ts.
 */
import { Schema } from 'apache-arrow';
import { batchMessage, type IpcMessage, schemaMessage } from '../arrow/ipc.ts';
import { declaredType, PG_JSON_RENDERED } from '../arrow/mapping.ts';
import { arrowField, type ColumnType, UTF8 } from '../arrow/types.ts';
import { type BytesWriter, type ColumnWriter, columnWriter, type NumberWriter, type WideWriter } from '../arrow/writers.ts';
import { CopyRowReader, fieldEnds, isCopyNull } from './pg-copy.ts';
import type { PgColumn } from './pg-schema.ts';

export interface ArrowCopyColumn {
  readonly name: string;
  readonly type: ColumnType;
  /** Selected as `to_json(col)`: the column's type has no precise Arrow type. */
  readonly json: boolean;
}

export function arrowCopyColumn(column: PgColumn): ArrowCopyColumn {
  const type = declaredType(column.type);
  return { name: column.name, type: type ?? UTF8, json: type === null || PG_JSON_RENDERED.has(column.type) };
}

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
/** COPY's escapes (PostgreSQL manual, COPY "Text Format"): the byte each `\x` stands for. */
const UNESCAPED: Readonly<Record<number, number>> = { 98: 0x08, 102: 0x0c, 110: 0x0a, 114: 0x0d, 116: 0x09, 118: 0x0b };

/** A field's text, unescaped, appended to a bytes column as one value. */
function appendText(writer: BytesWriter, src: Buffer, p: number, end: number): void {
  const out = writer.reserve(end - p);
  let o = writer.end;
  for (let k = p; k < end; k++) {
    const c = src[k] as number;
    if (c !== BACKSLASH) out[o++] = c;
    else {
      const next = src[++k] as number;
      out[o++] = UNESCAPED[next] ?? next;
    }
  }
  writer.end = o;
  writer.close(true);
}

function unescaped(src: Buffer, p: number, end: number): string {
  return src.indexOf(BACKSLASH, p) < 0 || src.indexOf(BACKSLASH, p) >= end
    ? src.toString('latin1', p, end)
    : src.toString('latin1', p, end).replace(/\\(.)/g, (_m, c: string) => String.fromCharCode(UNESCAPED[c.charCodeAt(0)] ?? c.charCodeAt(0)));
}

/** Digits (with an optional sign) of src[p, end) as a number; NaN when anything else is there. */
function integer(src: Buffer, p: number, end: number): number {
  const negative = src[p] === 0x2d;
  let n = 0;
  for (let k = negative ? p + 1 : p; k < end; k++) {
    const d = (src[k] as number) - 0x30;
    if (d < 0 || d > 9) return Number.NaN;
    n = n * 10 + d;
  }
  return negative ? -n : n;
}

const digits = (src: Buffer, p: number, n: number) => integer(src, p, p + n);

/**
 * `YYYY-MM-DD[ HH:MM:SS[.ffffff]][+HH[:MM]]` (COPY's ISO output; the read sets
 * TimeZone UTC) as microseconds since the epoch, or NaN for anything else
 * (`infinity`, BC dates, years past 9999), which then takes the slow path.
 */
function micros(src: Buffer, p: number, end: number): number {
  if (end - p < 10 || src[p + 4] !== 0x2d) return Number.NaN;
  let ms = Date.UTC(digits(src, p, 4), digits(src, p + 5, 2) - 1, digits(src, p + 8, 2));
  let k = p + 10;
  let fraction = 0;
  if (k < end && src[k] === 0x20) {
    ms += (digits(src, k + 1, 2) * 3600 + digits(src, k + 4, 2) * 60 + digits(src, k + 7, 2)) * 1000;
    k += 9;
    if (src[k] === 0x2e) {
      let scale = 100_000;
      for (k++; k < end && (src[k] as number) >= 0x30 && (src[k] as number) <= 0x39; k++, scale /= 10) fraction += ((src[k] as number) - 0x30) * scale;
    }
  }
  if (k < end) {
    const sign = src[k] === 0x2d ? -1 : 1;
    const minutes = end - k >= 6 ? digits(src, k + 4, 2) : 0;
    ms -= sign * (digits(src, k + 1, 2) * 60 + minutes) * 60_000;
  }
  return ms * 1000 + fraction;
}

type FieldReader = (src: Buffer, p: number, end: number) => void;

/** How one column's COPY text goes into its writer; a value the fast parse cannot take goes through the writer's own conversion. */
function fieldReader(column: ArrowCopyColumn, writer: ColumnWriter): FieldReader {
  const slow: FieldReader = (src, p, end) => writer.push(unescaped(src, p, end));
  const { type } = column;
  if (column.json) {
    return (src, p, end) => (src[p] === QUOTE ? writer.push(JSON.parse(unescaped(src, p, end)) as string) : appendText(writer as BytesWriter, src, p, end));
  }
  switch (type.kind) {
    case 'utf8':
      return (src, p, end) => appendText(writer as BytesWriter, src, p, end);
    case 'int':
    case 'date': {
      const read = type.kind === 'int' ? integer : (src: Buffer, p: number, end: number) => Math.floor(micros(src, p, end) / 86_400_000_000);
      if (type.kind === 'int' && type.bits === 64) {
        return (src, p, end) => (end - p <= 15 ? (writer as WideWriter).pushSafe(integer(src, p, end)) : slow(src, p, end));
      }
      return (src, p, end) => {
        const n = read(src, p, end);
        if (Number.isNaN(n)) slow(src, p, end);
        else (writer as NumberWriter).pushRaw(n);
      };
    }
    case 'float':
      return (src, p, end) => (writer as NumberWriter).pushRaw(Number(src.toString('latin1', p, end)));
    case 'bool':
      return (src, p) => writer.push(src[p] === 0x74);
    case 'timestamp':
      return (src, p, end) => {
        const n = micros(src, p, end);
        if (Number.isSafeInteger(n)) (writer as WideWriter).pushSafe(n);
        else slow(src, p, end);
      };
    default:
      return slow;
  }
}

/** COPY text rows → Arrow record batches of at most `batchSize` rows, written column by column. */
export class CopyArrowConverter extends CopyRowReader<IpcMessage> {
  readonly schema: Schema;
  readonly #writers: ColumnWriter[];
  readonly #readers: FieldReader[];
  readonly #ends: number[];
  readonly #batchSize: number;
  #rows = 0;

  constructor(columns: readonly ArrowCopyColumn[], batchSize: number) {
    super();
    this.schema = new Schema(columns.map(arrowField));
    this.#writers = columns.map((c) => columnWriter(c.type));
    this.#readers = columns.map((c, i) => fieldReader(c, this.#writers[i] as ColumnWriter));
    this.#ends = columns.map(() => 0);
    this.#batchSize = batchSize;
  }

  protected rows(src: Buffer, from: number, to: number, done: IpcMessage[]): void {
    const ends = this.#ends;
    const readers = this.#readers;
    const writers = this.#writers;
    for (let i = from; i < to; ) {
      const newline = src.indexOf(0x0a, i);
      fieldEnds(src, i, newline, ends);
      let p = i;
      for (let f = 0; f < ends.length; f++) {
        const end = ends[f] as number;
        if (isCopyNull(src, p, end)) (writers[f] as ColumnWriter).push(null);
        else (readers[f] as FieldReader)(src, p, end);
        p = end + 1;
      }
      if (++this.#rows === this.#batchSize) done.push(this.#batch());
      i = newline + 1;
    }
  }

  protected last(): IpcMessage | null {
    return this.#rows > 0 ? this.#batch() : null;
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
