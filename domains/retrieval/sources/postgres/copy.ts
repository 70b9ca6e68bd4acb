/**
 * `COPY (SELECT …) TO STDOUT` text rows → JSON arrays of row objects as
 * bytes, converted byte by byte (docs/retrieval.md, Postgres). Each row is
 * what PostgreSQL's `row_to_json` gives for it: the gateway renders
 * numbers, booleans, json/jsonb and text-like values itself (cheap), and
 * the SELECT hands every other type to PostgreSQL as `to_json(col)`.
 * Rendering in PostgreSQL costs about 1 CPU-µs a row on the server, which
 * caps a stream near 1M rows/s (a third of a plain COPY); plain COPY text
 * costs it a third of that (bench/README.md, retrieval).
 *
 * COPY text format (PostgreSQL manual, COPY "Text Format"): a row ends with
 * `\n`, fields are separated by `\t`, `\N` is NULL, and a value escapes
 * backslash and `\b \f \n \r \t \v` — JSON's own escapes but for `\v`.
 */
import { RetrievalErrors } from '../../errors.ts';
import type { JsonRows } from '../types.ts';

/**
 * How the gateway writes a column's COPY text as JSON. `json` is also used
 * for `to_json(col)` output. These follow PostgreSQL's datum_to_json:
 * numbers as they are unless they are NaN or ±Infinity (then a string),
 * booleans as true/false, json/jsonb embedded, anything else a string.
 */
export type CopyKind = 'number' | 'boolean' | 'json' | 'text';

const KINDS: Readonly<Record<string, CopyKind>> = {
  smallint: 'number',
  integer: 'number',
  bigint: 'number',
  real: 'number',
  'double precision': 'number',
  numeric: 'number',
  boolean: 'boolean',
  json: 'json',
  jsonb: 'json',
  text: 'text',
  'character varying': 'text',
  character: 'text',
  name: 'text',
  uuid: 'text',
};

/** The kind of a column of this information_schema `data_type`; null: PostgreSQL renders it (`to_json`). */
export function copyKind(dataType: string, isDomain: boolean): CopyKind | null {
  return isDomain ? null : (KINDS[dataType] ?? null);
}

export interface CopyColumn {
  readonly name: string;
  readonly kind: CopyKind;
}

/**
 * Longest COPY row taken (its JSON may be up to six times this). PostgreSQL
 * allows values of 1 GB; a row past this fails the read with
 * `row_too_large` rather than holding gigabytes (select fewer columns).
 */
export const MAX_ROW_BYTES = 16 << 20;
/** An output buffer grown past this by one large row is not kept for the next batch. */
const KEEP_BUFFER_BYTES = 4 << 20;
/** A batch this small is copied out (from Node's shared pool, which serves allocations under half its size). */
const COPIED_BATCH_BYTES = Buffer.poolSize >>> 1;

const BACKSLASH = 0x5c;
const TAB = 0x09;
const NEWLINE = 0x0a;
const QUOTE = 0x22;
const HEX = '0123456789abcdef';
const LITERALS = { null: Buffer.from('null'), true: Buffer.from('true'), false: Buffer.from('false') };

/**
 * Copies src[from, to) to out at o. A byte loop: Buffer#copy's argument
 * checks cost more than the few bytes of a key or a number (profiled).
 */
function put(src: Uint8Array, from: number, to: number, out: Buffer, o: number): number {
  if (to - from > 64) {
    out.set(src.subarray(from, to), o);
    return o + to - from;
  }
  for (let k = from; k < to; k++) out[o++] = src[k] as number;
  return o;
}

/**
 * The tab ending the field at p, or the row's newline. Most fields are a
 * few bytes, for which a byte loop beats Buffer#indexOf's native call (the
 * converter took 245 → 165 ns a row, bench/README.md retrieval); a long
 * field goes on with indexOf.
 */
function fieldEnd(src: Buffer, p: number, newline: number): number {
  const stop = Math.min(newline, p + 32);
  for (; p < stop; p++) if (src[p] === TAB) return p;
  if (p === newline) return p;
  const tab = src.indexOf(TAB, p);
  return tab < 0 || tab > newline ? newline : tab;
}

/**
 * COPY text fed in chunks split anywhere, handed on as whole rows: a row
 * split across chunks is held (joined once, at its newline), and one longer
 * than MAX_ROW_BYTES fails the read. Subclasses turn rows into batches.
 */
/** COPY output in the chunks it arrives in → batches: text rows (CopyRowReader) or binary tuples (arrow.ts). */
export interface CopyReader<T> {
  /** Appends the batches this chunk completes to `done` (a new array when not given), and returns it. */
  push(chunk: Buffer, done?: T[]): T[];
  /** The last, partial batch (null when there is none); throws if the stream ended inside a row. */
  end(): T | null;
}

export abstract class CopyRowReader<T> implements CopyReader<T> {
  /** The start of a row not yet ended, in the pieces it arrived in. */
  #carry: Buffer[] = [];
  #carryBytes = 0;

  push(chunk: Buffer, done: T[] = []): T[] {
    let start = 0;
    if (this.#carryBytes > 0) {
      const newline = chunk.indexOf(NEWLINE);
      if (newline < 0) {
        this.#hold(Buffer.from(chunk));
        return done;
      }
      this.#hold(chunk.subarray(0, newline + 1));
      const row = Buffer.concat(this.#carry, this.#carryBytes);
      this.#carry = [];
      this.#carryBytes = 0;
      this.rows(row, 0, row.length, done);
      start = newline + 1;
    }
    const end = chunk.lastIndexOf(NEWLINE) + 1;
    if (end > start) this.rows(chunk, start, end, done);
    if (end < chunk.length) this.#hold(Buffer.from(chunk.subarray(Math.max(start, end))));
    return done;
  }

  /** The last, partial batch (null when there is none); throws if the stream ended inside a row. */
  end(): T | null {
    if (this.#carryBytes > 0) throw new Error('COPY output ended inside a row');
    return this.last();
  }

  /** Converts the rows of src[from, to) (whole lines), closing each batch that fills into `done`. */
  protected abstract rows(src: Buffer, from: number, to: number, done: T[]): void;

  protected abstract last(): T | null;

  #hold(piece: Buffer): void {
    this.#carryBytes += piece.length;
    if (this.#carryBytes > MAX_ROW_BYTES) throw RetrievalErrors.make.row_too_large({ max_row_bytes: MAX_ROW_BYTES });
    this.#carry.push(piece);
  }
}

/** The field ends of a COPY row src[from, newline) into `ends`; throws when it has fewer than `ends.length` fields. */
export function fieldEnds(src: Buffer, from: number, newline: number, ends: number[]): void {
  if (newline - from > MAX_ROW_BYTES) throw RetrievalErrors.make.row_too_large({ max_row_bytes: MAX_ROW_BYTES });
  const last = ends.length - 1;
  let p = from;
  for (let f = 0; f <= last; f++) {
    const end = f === last ? newline : fieldEnd(src, p, newline);
    if (end === newline && f < last) throw new Error('COPY row has fewer fields than the SELECT');
    ends[f] = end;
    p = end + 1;
  }
}

/** True when the field src[p, end) is COPY's NULL, `\N`. */
export const isCopyNull = (src: Buffer, p: number, end: number): boolean =>
  end - p === 2 && src[p] === BACKSLASH && src[p + 1] === 0x4e;

/**
 * Converts COPY text rows to batches of at most `batchSize` rows, each
 * batch its JSON array's bytes in a buffer of its own (handed on as it is:
 * no string is made of it).
 */
export class CopyJsonConverter extends CopyRowReader<JsonRows> {
  readonly #keys: Buffer[];
  readonly #kinds: CopyKind[];
  readonly #batchSize: number;
  /**
   * Most bytes a row's JSON adds beyond 6 per COPY byte (keys, braces, quotes, literals, `,` before it, `]` after it).
   */
  readonly #overhead: number;
  readonly #fieldEnds: number[];
  #out: Buffer;
  #o = 0;
  #ends: number[] = [];

  constructor(columns: readonly CopyColumn[], batchSize: number) {
    super();
    this.#keys = columns.map((c, i) => Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(c.name)}:`));
    this.#kinds = columns.map((c) => c.kind);
    this.#batchSize = batchSize;
    this.#overhead = this.#keys.reduce((n, key) => n + key.length + 6, 4);
    this.#fieldEnds = columns.map(() => 0);
    this.#out = this.#open(Buffer.allocUnsafe(1 << 16));
  }

  protected last(): JsonRows | null {
    return this.#ends.length > 0 ? this.#close() : null;
  }

  /** `out` begun as a batch: `[` and no rows. */
  #open(out: Buffer): Buffer {
    out[0] = 0x5b;
    this.#o = 1;
    this.#ends = [];
    return out;
  }

  /**
   * The current batch closed with `]`. A small one leaves as a copy of its own size and the buffer is written again:
   * with small batches one chunk closes thousands, all queued at once, and each would otherwise hold a buffer of
   * 64 KiB. A large one leaves in its buffer, and the next batch gets a new one sized like it.
   */
  #close(): JsonRows {
    const out = this.#out;
    out[this.#o++] = 0x5d;
    if (this.#o < COPIED_BATCH_BYTES) {
      const batch = { json: Buffer.from(out.subarray(0, this.#o)), ends: this.#ends };
      this.#open(out);
      return batch;
    }
    const batch = { json: out.subarray(0, this.#o), ends: this.#ends };
    this.#out = this.#open(
      Buffer.allocUnsafe(Math.min(KEEP_BUFFER_BYTES, Math.max(1 << 16, this.#o + (this.#o >> 3)))),
    );
    return batch;
  }

  protected rows(src: Buffer, from: number, to: number, done: JsonRows[]): void {
    let i = from;
    while (i < to) {
      const newline = src.indexOf(NEWLINE, i);
      this.#o = this.#row(src, i, newline, this.#o);
      this.#ends.push(this.#o);
      if (this.#ends.length === this.#batchSize) done.push(this.#close());
      i = newline + 1;
    }
  }

  #row(src: Buffer, from: number, newline: number, o: number): number {
    const ends = this.#fieldEnds;
    fieldEnds(src, from, newline, ends);
    this.#reserve(o, (newline - from) * 6 + this.#overhead);
    const out = this.#out;
    if (this.#ends.length > 0) out[o++] = 0x2c;
    let p = from;
    for (let f = 0; f < ends.length; f++) {
      const end = ends[f] as number;
      const key = this.#keys[f] as Buffer;
      o = put(key, 0, key.length, out, o);
      o = isCopyNull(src, p, end) ? put(LITERALS.null, 0, 4, out, o) : this.#value(src, p, end, f, o);
      p = end + 1;
    }
    out[o++] = 0x7d;
    return o;
  }

  #value(src: Buffer, p: number, end: number, f: number, o: number): number {
    const out = this.#out;
    switch (this.#kinds[f]) {
      case 'number':
        // NaN, Infinity, -Infinity are not JSON numbers: datum_to_json quotes them.
        if (src[p] === 0x4e || src[p] === 0x49 || src[p + 1] === 0x49) return quoted(src, p, end, out, o);
        return put(src, p, end, out, o);
      case 'boolean':
        return src[p] === 0x74 ? put(LITERALS.true, 0, 4, out, o) : put(LITERALS.false, 0, 5, out, o);
      case 'json':
        return json(src, p, end, out, o);
      default:
        return quoted(src, p, end, out, o);
    }
  }

  #reserve(o: number, bytes: number): void {
    if (o + bytes <= this.#out.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#out.length * 2, o + bytes));
    this.#out.copy(bigger, 0, 0, o);
    this.#out = bigger;
  }
}

/**
 * A COPY text value as a JSON string. COPY's escapes are JSON's (`\\`, `\b`,
 * `\f`, `\n`, `\r`, `\t` are copied as they are) except `\v`; a quote and
 * the control characters COPY leaves raw are escaped as escape_json does.
 */
function quoted(src: Buffer, p: number, end: number, out: Buffer, o: number): number {
  out[o++] = QUOTE;
  for (let k = p; k < end; k++) {
    const c = src[k] as number;
    if (c === BACKSLASH) {
      const next = src[++k] as number;
      if (next === 0x76) o += out.write('\\u000b', o, 'latin1');
      else {
        out[o++] = BACKSLASH;
        out[o++] = next;
      }
    } else if (c === QUOTE) {
      out[o++] = BACKSLASH;
      out[o++] = QUOTE;
    } else if (c < 0x20) {
      o += out.write(`\\u00${HEX[c >> 4]}${HEX[c & 15]}`, o, 'latin1');
    } else out[o++] = c;
  }
  out[o++] = QUOTE;
  return o;
}

/**
 * json/jsonb text embedded: `\\` is one backslash; any other escape is a
 * control character, which valid JSON holds only as whitespace between
 * tokens (a `json` value keeps its input's layout), so it becomes a space
 * and a row never holds a line break (an SSE `data:` line cannot carry one).
 */
function json(src: Buffer, p: number, end: number, out: Buffer, o: number): number {
  let k = src.indexOf(BACKSLASH, p);
  if (k < 0 || k >= end) return put(src, p, end, out, o);
  o = put(src, p, k, out, o);
  for (; k < end; k++) {
    const c = src[k] as number;
    if (c !== BACKSLASH) out[o++] = c;
    else out[o++] = src[++k] === BACKSLASH ? BACKSLASH : 0x20;
  }
  return o;
}
