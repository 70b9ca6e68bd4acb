/**
 * Column writers: values appended one column at a time into the buffers an
 * Arrow array is made of (validity bitmap, values, offsets), then handed to
 * apache-arrow as `Data` without a copy. No object per value is kept; a
 * value that does not fit the column's type is written as null (values.ts).
 */
import { type Data, makeData } from 'apache-arrow';
import { arrowType, type ColumnType } from './types.ts';
import { toBigInt64, toBool, toBytes, toDays, toFloat, toMicros, toSmallInt, toText, toUnscaled } from './values.ts';

export interface ColumnWriter {
  /** Appends one value; null, undefined or a value the type cannot hold is a null. */
  push(value: unknown): void;
  /**
   * The values appended since the last finish, as Arrow Data over the
   * writer's own buffers, which the next batch reuses: valid until the next
   * push (batchMessage copies it into the IPC body at once).
   */
  finish(): Data;
}

type Numbers = Int8Array | Int16Array | Int32Array | Float32Array | Float64Array;

function grown<T extends Numbers | Uint8Array>(array: T, needed: number): T {
  if (needed <= array.length) return array;
  const bigger = new (array.constructor as new (n: number) => T)(Math.max(needed, array.length * 2));
  bigger.set(array as never);
  return bigger;
}

/**
 * A bitmap appended bit by bit: the validity of a column, or a boolean
 * column's values. Its bytes are kept from batch to batch (the batch is
 * copied into its IPC body before the next value comes, ipc.ts). Until the
 * first unset bit only the length is counted (a column without a null costs
 * an increment a value); the run of set bits is written out when one is
 * unset or the bitmap is taken.
 */
export class Bits {
  #bytes = new Uint8Array(64);
  length = 0;
  unset = 0;

  push(bit: boolean): void {
    if (bit && this.unset === 0) this.length++;
    else this.#pushWritten(bit);
  }

  #pushWritten(bit: boolean): void {
    if (this.unset === 0) this.#writeSetRun();
    const at = this.length >> 3;
    if (at >= this.#bytes.length) this.#bytes = grown(this.#bytes, at + 1);
    if ((this.length & 7) === 0) this.#bytes[at] = 0;
    if (bit) this.#bytes[at] = (this.#bytes[at] as number) | (1 << (this.length & 7));
    else this.unset++;
    this.length++;
  }

  /** The first `length` bits, all set, as push would have written them: whole bytes 0xff, the last one's top bits 0. */
  #writeSetRun(): void {
    const whole = this.length >> 3;
    this.#bytes = grown(this.#bytes, whole + 1);
    this.#bytes.fill(0xff, 0, whole);
    if ((this.length & 7) !== 0) this.#bytes[whole] = (1 << (this.length & 7)) - 1;
  }

  take(): Uint8Array {
    if (this.unset === 0) this.#writeSetRun();
    const out = this.#bytes.subarray(0, (this.length + 7) >> 3);
    this.length = 0;
    this.unset = 0;
    return out;
  }
}

/** Shared by every writer: the type and the validity bitmap (left out when nothing is null). */
abstract class Writer implements ColumnWriter {
  protected readonly valid = new Bits();

  constructor(protected readonly type: ColumnType) {}

  abstract push(value: unknown): void;

  protected abstract buffers(length: number): Record<string, unknown>;

  finish(): Data {
    const length = this.valid.length;
    const nullCount = this.valid.unset;
    const bitmap = this.valid.take();
    const props = this.buffers(length);
    return makeData({
      type: arrowType(this.type),
      length,
      nullCount,
      nullBitmap: nullCount > 0 ? bitmap : undefined,
      ...props,
    } as never);
  }
}

/** Fixed-width numbers: ints up to 32 bits, floats, dates (days). */
export class NumberWriter extends Writer {
  #values: Numbers;

  constructor(
    type: ColumnType,
    make: (n: number) => Numbers,
    private readonly convert: (value: unknown) => number | null,
  ) {
    super(type);
    this.#values = make(1024);
  }

  push(value: unknown): void {
    this.pushRaw(value === null || value === undefined ? null : this.convert(value));
  }

  /** A value already of the column's kind (an integer in range, a float, a day number), or null. */
  pushRaw(n: number | null): void {
    const at = this.valid.length;
    if (at >= this.#values.length) this.#values = grown(this.#values, at + 1);
    this.#values[at] = n ?? 0;
    this.valid.push(n !== null);
  }

  protected buffers(length: number) {
    return { data: this.#values.subarray(0, length) };
  }
}

/**
 * 64-bit ints and timestamps, and decimals (two 64-bit words a value),
 * little-endian two's complement, kept as 32-bit words so a value that is a
 * safe integer is stored without making a BigInt (pushSafe).
 */
export class WideWriter extends Writer {
  #words = new Int32Array(2048);
  readonly #width: number;

  constructor(
    type: ColumnType,
    private readonly convert: (value: unknown) => bigint | null,
  ) {
    super(type);
    this.#width = type.kind === 'decimal' ? 4 : 2;
  }

  push(value: unknown): void {
    const n = value === null || value === undefined ? null : this.convert(value);
    const at = this.#room(n === null);
    if (n !== null)
      for (let w = 0; w < this.#width; w++) this.#words[at + w] = Number(BigInt.asIntN(32, n >> BigInt(32 * w)));
    this.valid.push(n !== null);
  }

  /** A value known to be a safe integer (|n| < 2^53), or null. */
  pushSafe(n: number | null): void {
    const at = this.#room(n === null);
    if (n !== null) {
      const high = Math.floor(n / 4294967296);
      this.#words[at] = n - high * 4294967296;
      this.#words[at + 1] = high;
      for (let w = 2; w < this.#width; w++) this.#words[at + w] = high < 0 ? -1 : 0;
    }
    this.valid.push(n !== null);
  }

  /** A 64-bit value as its two 32-bit words (`low` unsigned, `high` signed): as a binary COPY sends it, swapped. */
  pushWords(low: number, high: number): void {
    const at = this.#room(false);
    this.#words[at] = low;
    this.#words[at + 1] = high;
    for (let w = 2; w < this.#width; w++) this.#words[at + w] = high < 0 ? -1 : 0;
    this.valid.push(true);
  }

  /** Where the next value's words go, zeroed for a null (a value writes every word). */
  #room(isNull: boolean): number {
    const at = this.valid.length * this.#width;
    if (at + this.#width > this.#words.length) this.#words = grown(this.#words, at + this.#width);
    if (isNull) this.#words.fill(0, at, at + this.#width);
    return at;
  }

  protected buffers(length: number) {
    const words = this.#words.subarray(0, length * this.#width);
    if (this.type.kind === 'decimal') return { data: new Uint32Array(words.buffer, words.byteOffset, words.length) };
    return { data: new BigInt64Array(words.buffer, words.byteOffset, words.length / 2) };
  }
}

export class BoolWriter extends Writer {
  readonly #values = new Bits();

  push(value: unknown): void {
    const b = value === null || value === undefined ? null : toBool(value);
    this.#values.push(b === true);
    this.valid.push(b !== null);
  }

  protected buffers() {
    return { data: this.#values.take() };
  }
}

/** Variable-width values: 32-bit offsets and the bytes (UTF-8 text, or binary). */
export class BytesWriter extends Writer {
  #offsets = new Int32Array(1025);
  #bytes = Buffer.allocUnsafe(1 << 16);
  #end = 0;

  push(value: unknown): void {
    const present = value !== null && value !== undefined;
    if (this.type.kind === 'binary') {
      const bytes = present ? toBytes(value) : null;
      if (bytes) this.appendBytes(bytes, 0, bytes.length);
      this.close(bytes !== null);
      return;
    }
    if (present) {
      const text = toText(value);
      this.reserve(text.length * 3);
      this.#end += this.#bytes.write(text, this.#end, 'utf8');
    }
    this.close(present);
  }

  /** Room for `bytes` more value bytes. */
  reserve(bytes: number): Buffer {
    if (this.#end + bytes > this.#bytes.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.#bytes.length * 2, this.#end + bytes));
      this.#bytes.copy(bigger, 0, 0, this.#end);
      this.#bytes = bigger;
    }
    return this.#bytes;
  }

  appendBytes(src: Uint8Array, from: number, to: number): void {
    this.reserve(to - from).set(src.subarray(from, to), this.#end);
    this.#end += to - from;
  }

  /** The value bytes end at `end` (written into reserve()'s buffer). */
  set end(end: number) {
    this.#end = end;
  }

  get end(): number {
    return this.#end;
  }

  /** Ends the current value (empty when `present` is false). */
  close(present: boolean): void {
    const at = this.valid.length + 1;
    if (at >= this.#offsets.length) this.#offsets = grown(this.#offsets, at + 1);
    this.#offsets[at] = this.#end;
    this.valid.push(present);
  }

  protected buffers(length: number) {
    const valueOffsets = this.#offsets.subarray(0, length + 1);
    const data = this.#bytes.subarray(0, this.#end);
    this.#end = 0;
    return { valueOffsets, data };
  }
}

export class ListWriter extends Writer {
  #offsets = new Int32Array(1025);
  #items = 0;

  constructor(
    type: ColumnType & { kind: 'list' },
    private readonly item: ColumnWriter,
  ) {
    super(type);
  }

  push(value: unknown): void {
    const list = Array.isArray(value) ? value : null;
    for (const item of list ?? []) this.item.push(item);
    this.#items += list?.length ?? 0;
    this.#offsets = grown(this.#offsets, this.valid.length + 2);
    this.#offsets[this.valid.length + 1] = this.#items;
    this.valid.push(list !== null);
  }

  protected buffers(length: number) {
    const valueOffsets = this.#offsets.subarray(0, length + 1);
    this.#items = 0;
    return { valueOffsets, child: this.item.finish() };
  }
}

export class StructWriter extends Writer {
  constructor(
    type: ColumnType & { kind: 'struct' },
    private readonly children: readonly ColumnWriter[],
  ) {
    super(type);
  }

  push(value: unknown): void {
    const object =
      value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
    const fields = (this.type as ColumnType & { kind: 'struct' }).fields;
    for (let i = 0; i < fields.length; i++) this.children[i]?.push(object?.[(fields[i] as { name: string }).name]);
    this.valid.push(object !== null);
  }

  protected buffers() {
    return { children: this.children.map((c) => c.finish()) };
  }
}

const SMALL_INTS = {
  8: (n: number) => new Int8Array(n),
  16: (n: number) => new Int16Array(n),
  32: (n: number) => new Int32Array(n),
};

export function columnWriter(type: ColumnType): ColumnWriter {
  switch (type.kind) {
    case 'int':
      if (type.bits === 64) return new WideWriter(type, toBigInt64);
      return new NumberWriter(type, SMALL_INTS[type.bits], (v) => toSmallInt(v, type.bits));
    case 'float':
      return new NumberWriter(type, (n) => (type.bits === 32 ? new Float32Array(n) : new Float64Array(n)), toFloat);
    case 'date':
      return new NumberWriter(type, (n) => new Int32Array(n), toDays);
    case 'timestamp':
      return new WideWriter(type, toMicros);
    case 'decimal':
      return new WideWriter(type, (v) => toUnscaled(v, type.precision, type.scale));
    case 'bool':
      return new BoolWriter(type);
    case 'utf8':
    case 'binary':
      return new BytesWriter(type);
    case 'list':
      return new ListWriter(type, columnWriter(type.item));
    case 'struct':
      return new StructWriter(
        type,
        type.fields.map((f) => columnWriter(f.type)),
      );
  }
}
