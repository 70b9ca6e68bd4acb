/**
 * `COPY (SELECT …) TO STDOUT` text rows straight into Arrow column buffers
 * (the Flight throughput path, docs/retrieval.md "Throughput choices"): an
 * integer, float, boolean, date or timestamp field is parsed from its bytes
 * into the column's typed array, a text field is unescaped into the
 * column's value bytes; no row object and, for those types, no string is
 * made. A type without a precise Arrow type is selected as `to_json(col)`
 * and sent as that JSON's text (a JSON string as the string itself), the
 * text a gated stream's row path gives for it. COPY text format: copy.ts.
 */
import { Schema } from 'apache-arrow';
import { batchMessage, type IpcMessage, schemaMessage } from '../../arrow/ipc.ts';
import { declaredType, PG_JSON_RENDERED } from '../../arrow/mapping.ts';
import { arrowField, type ColumnType, UTF8 } from '../../arrow/types.ts';
import { utcDay } from '../../arrow/values.ts';
import {
  type BytesWriter,
  type ColumnWriter,
  columnWriter,
  type NumberWriter,
  type WideWriter,
} from '../../arrow/writers.ts';
import { RetrievalErrors } from '../../errors.ts';
import type { PgColumn } from './catalog.ts';
import { CopyRowReader, MAX_ROW_BYTES } from './copy.ts';

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

const TAB = 0x09;
const NEWLINE = 0x0a;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const BACKSLASH = 0x5c;
const QUOTE = 0x22;
/** COPY's escapes (PostgreSQL manual, COPY "Text Format"): the byte each `\x` stands for. */
const UNESCAPED: Readonly<Record<number, number>> = { 98: 0x08, 102: 0x0c, 110: 0x0a, 114: 0x0d, 116: 0x09, 118: 0x0b };

/**
 * Text up to this many bytes is copied in the same pass that finds its end;
 * a longer value is scanned first, then copied with one native call.
 */
const SHORT_TEXT = 64;

/**
 * The text field at p appended to a bytes column as one value: copied as it
 * is, or unescaped when it holds a backslash. Returns the field's end.
 */
function appendText(writer: BytesWriter, src: Buffer, p: number): number {
  const out = writer.reserve(SHORT_TEXT);
  let o = writer.end;
  const stop = p + SHORT_TEXT;
  for (let k = p; k < stop; k++) {
    const c = src[k] as number;
    if (c === TAB || c === NEWLINE) {
      writer.end = o;
      writer.close(true);
      return k;
    }
    if (c === BACKSLASH) break;
    out[o++] = c;
  }
  return appendScanned(writer, src, p);
}

/** appendText for a long or escaped value: its end and whether it holds a backslash found first. */
function appendScanned(writer: BytesWriter, src: Buffer, p: number): number {
  let end = p;
  let escaped = false;
  for (let c = src[end]; c !== TAB && c !== NEWLINE; c = src[++end]) if (c === BACKSLASH) escaped = true;
  if (end - p > MAX_ROW_BYTES) throw RetrievalErrors.make.row_too_large({ max_row_bytes: MAX_ROW_BYTES });
  const out = writer.reserve(end - p);
  if (escaped) writer.end = unescapeInto(out, writer.end, src, p, end);
  else {
    out.set(src.subarray(p, end), writer.end);
    writer.end = writer.end + end - p;
  }
  writer.close(true);
  return end;
}

/** src[p, end) with COPY's escapes undone, written to out at o; returns the end of what was written. */
function unescapeInto(out: Buffer, o: number, src: Buffer, p: number, end: number): number {
  for (let k = p; k < end; k++) {
    const c = src[k] as number;
    if (c !== BACKSLASH) out[o++] = c;
    else {
      const next = src[++k] as number;
      out[o++] = UNESCAPED[next] ?? next;
    }
  }
  return o;
}

function unescaped(src: Buffer, p: number, end: number): string {
  return src.indexOf(BACKSLASH, p) < 0 || src.indexOf(BACKSLASH, p) >= end
    ? src.toString('latin1', p, end)
    : src
        .toString('latin1', p, end)
        .replace(/\\(.)/g, (_m, c: string) => String.fromCharCode(UNESCAPED[c.charCodeAt(0)] ?? c.charCodeAt(0)));
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
  let ms = utcDay(digits(src, p, 4), digits(src, p + 5, 2), digits(src, p + 8, 2));
  let k = p + 10;
  let fraction = 0;
  if (k < end && src[k] === 0x20) {
    ms += (digits(src, k + 1, 2) * 3600 + digits(src, k + 4, 2) * 60 + digits(src, k + 7, 2)) * 1000;
    k += 9;
    if (src[k] === 0x2e) {
      let scale = 100_000;
      for (k++; k < end && (src[k] as number) >= 0x30 && (src[k] as number) <= 0x39; k++, scale /= 10)
        fraction += ((src[k] as number) - 0x30) * scale;
    }
  }
  if (k < end) {
    const sign = src[k] === 0x2d ? -1 : 1;
    const minutes = end - k >= 6 ? digits(src, k + 4, 2) : 0;
    ms -= sign * (digits(src, k + 1, 2) * 60 + minutes) * 60_000;
  }
  return ms * 1000 + fraction;
}

/**
 * How the row loop reads a column: a parse specialised to its Arrow type
 * (one `switch` arm each, so no call per field goes through a closure), or
 * the writer's own conversion of the field's text (SLOW).
 */
const INT = 0;
const INT64 = 1;
const FLOAT = 2;
const BOOLEAN = 3;
const TEXT = 4;
const JSON_TEXT = 5;
const DAY = 6;
const TIMESTAMP = 7;
const SLOW = 8;

function readKind(column: ArrowCopyColumn): number {
  if (column.json) return JSON_TEXT;
  const { type } = column;
  if (type.kind === 'int') return type.bits === 64 ? INT64 : INT;
  const kinds: Partial<Record<ColumnType['kind'], number>> = {
    float: FLOAT,
    bool: BOOLEAN,
    utf8: TEXT,
    date: DAY,
    timestamp: TIMESTAMP,
  };
  return kinds[type.kind] ?? SLOW;
}

/** Past this many digits an int8 may not be a safe integer: it takes the BigInt conversion. */
const SAFE_DIGITS = 15;

/** The tab or newline ending the field at p (COPY escapes both inside a value, so the first one ends it). */
function fieldStop(src: Buffer, p: number): number {
  let c = src[p];
  while (c !== TAB && c !== NEWLINE) c = src[++p];
  return p;
}

/**
 * An integer field appended to its column, its digits summed in the pass
 * that finds its end. An int8 too long to be a safe integer, or not all
 * digits, is read again (the BigInt conversion, or the NaN integer() gives).
 */
function appendInteger(writer: ColumnWriter, src: Buffer, p: number, wide: boolean): number {
  const negative = src[p] === MINUS;
  let k = negative ? p + 1 : p;
  let n = 0;
  for (let d = (src[k] as number) - DIGIT_0; d >= 0 && d <= 9; d = (src[++k] as number) - DIGIT_0) n = n * 10 + d;
  if (!wide) (writer as NumberWriter).pushRaw(negative ? -n : n);
  else if (k - p <= SAFE_DIGITS && (src[k] === TAB || src[k] === NEWLINE))
    (writer as WideWriter).pushSafe(negative ? -n : n);
  else {
    const end = fieldStop(src, k);
    if (end - p <= SAFE_DIGITS) (writer as WideWriter).pushSafe(integer(src, p, end));
    else writer.push(src.toString('latin1', p, end));
    return end;
  }
  return k;
}

/** A float, date or timestamp parsed from the field's bytes, or any value through the writer's own conversion. */
function parsed(src: Buffer, p: number, writer: ColumnWriter, kind: number): number {
  const end = fieldStop(src, p);
  const at = kind === TIMESTAMP ? micros(src, p, end) : Number.NaN;
  if (kind === FLOAT) (writer as NumberWriter).pushRaw(Number(src.toString('latin1', p, end)));
  else if (kind === DAY && src[p + 4] === MINUS && end - p === 10)
    (writer as NumberWriter).pushRaw(Math.floor(micros(src, p, end) / 86_400_000_000));
  else if (Number.isSafeInteger(at)) (writer as WideWriter).pushSafe(at);
  else writer.push(unescaped(src, p, end));
  return end;
}

/**
 * COPY text rows → Arrow record batches of at most `batchSize` rows. Each
 * field is parsed where it lies and its end found by the same scan: digits
 * straight into the column's typed array (no string), text copied as bytes
 * (unescaped only when it holds a backslash). Column buffers are kept from
 * batch to batch.
 */
export class CopyArrowConverter extends CopyRowReader<IpcMessage> {
  readonly schema: Schema;
  readonly #writers: ColumnWriter[];
  readonly #kinds: number[];
  readonly #batchSize: number;
  #rows = 0;

  constructor(columns: readonly ArrowCopyColumn[], batchSize: number) {
    super();
    this.schema = new Schema(columns.map(arrowField));
    this.#writers = columns.map((c) => columnWriter(c.type));
    this.#kinds = columns.map(readKind);
    this.#batchSize = batchSize;
  }

  protected rows(src: Buffer, from: number, to: number, done: IpcMessage[]): void {
    // Held in locals: the loop runs once a field, and a private field's load is not free.
    const writers = this.#writers;
    const kinds = this.#kinds;
    const last = kinds.length - 1;
    for (let p = from; p < to; ) {
      const start = p;
      for (let f = 0; f <= last; f++) {
        const end = this.#field(src, p, writers[f] as ColumnWriter, kinds[f] as number);
        if (src[end] !== (f === last ? NEWLINE : TAB))
          throw new Error('COPY row does not have the fields the SELECT names');
        p = end + 1;
      }
      if (p - start > MAX_ROW_BYTES) throw RetrievalErrors.make.row_too_large({ max_row_bytes: MAX_ROW_BYTES });
      if (++this.#rows === this.#batchSize) done.push(this.#batch());
    }
  }

  /** Appends the field starting at p to its column; returns where the field ends (its tab or newline). */
  #field(src: Buffer, p: number, writer: ColumnWriter, kind: number): number {
    if (src[p] === BACKSLASH && src[p + 1] === 0x4e && (src[p + 2] === TAB || src[p + 2] === NEWLINE)) {
      writer.push(null);
      return p + 2;
    }
    switch (kind) {
      case INT:
      case INT64:
        return appendInteger(writer, src, p, kind === INT64);
      case TEXT:
        return appendText(writer as BytesWriter, src, p);
      case JSON_TEXT: {
        if (src[p] !== QUOTE) return appendText(writer as BytesWriter, src, p);
        const end = fieldStop(src, p);
        writer.push(JSON.parse(unescaped(src, p, end)) as string);
        return end;
      }
      case BOOLEAN:
        writer.push(src[p] === 0x74);
        return fieldStop(src, p);
      default:
        return parsed(src, p, writer, kind);
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
