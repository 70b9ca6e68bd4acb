/**
 * A source value to the number an Arrow column stores, or null when it does
 * not fit the column's type (the value is then sent as null: a column's
 * type is fixed by the stream's first message, docs/retrieval.md "Arrow
 * Flight"). Sources give numbers, bigints, booleans, Dates and text
 * (PostgreSQL's to_json text, Hive's strings), so each takes those forms,
 * and a number kept as its text to hold all its digits (exact-json.ts).
 */
import { numberText } from '../exact-json.ts';

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
/** ISO 8601 / PostgreSQL timestamp text: date, optional time with up to 9 fraction digits, optional offset. */
const TIMESTAMP =
  /^(\d{4,})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d\d(?::?\d\d)?(?::?\d\d)?)?$/i;
const MS_PER_DAY = 86_400_000;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

export function toBigInt64(given: unknown): bigint | null {
  const value = numberText(given);
  let big: bigint | null = null;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) big = BigInt(value);
  else if (typeof value === 'string' && INTEGER.test(value)) big = BigInt(value);
  return big !== null && big >= INT64_MIN && big <= INT64_MAX ? big : null;
}

/** An integer of at most `bits` (8, 16 or 32) bits. */
export function toSmallInt(value: unknown, bits: number): number | null {
  const big = toBigInt64(value);
  if (big === null) return null;
  const limit = 2 ** (bits - 1);
  const n = Number(big);
  return n >= -limit && n < limit ? n : null;
}

export function toFloat(given: unknown): number | null {
  const value = numberText(given);
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value !== 'string' || value.trim() === '') return null;
  const n = Number(value);
  // PostgreSQL's to_json quotes NaN and ±Infinity; Number() reads them, and nothing else non-numeric passes.
  return Number.isNaN(n) && value !== 'NaN' ? null : n;
}

export function toBool(value: unknown): boolean | null {
  if (typeof value === 'boolean') return value;
  if (value === 't' || value === 'true') return true;
  if (value === 'f' || value === 'false') return false;
  return null;
}

/** Days since 1970-01-01 (Arrow Date32). */
export function toDays(value: unknown): number | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : Math.floor(value.getTime() / MS_PER_DAY);
  if (typeof value !== 'string') return null;
  const micros = toMicros(value);
  return micros === null ? null : Math.floor(Number(micros) / (MS_PER_DAY * 1000));
}

function offsetMicros(zone: string | undefined): bigint {
  if (!zone || zone.toUpperCase() === 'Z') return 0n;
  const digits = zone.replaceAll(':', '');
  const sign = digits[0] === '-' ? -1n : 1n;
  const seconds =
    Number(digits.slice(1, 3)) * 3600 + Number(digits.slice(3, 5) || 0) * 60 + Number(digits.slice(5, 7) || 0);
  return sign * BigInt(seconds) * 1_000_000n;
}

/** Milliseconds since the epoch of a UTC calendar day; Date.UTC alone reads years 0-99 as 1900-1999. */
export function utcDay(year: number, month: number, day: number): number {
  const ms = Date.UTC(year, month - 1, day);
  return year < 100 ? new Date(ms).setUTCFullYear(year) : ms;
}

/** Microseconds since the epoch, UTC (a text value with an offset is shifted to UTC; one without is taken as is). */
export function toMicros(value: unknown): bigint | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : BigInt(value.getTime()) * 1000n;
  if (typeof value === 'number') return Number.isFinite(value) ? BigInt(Math.round(value * 1000)) : null;
  if (typeof value !== 'string') return null;
  const m = TIMESTAMP.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', fraction = '', zone] = m;
  const ms = utcDay(Number(y), Number(mo), Number(d)) + ((Number(h) * 60 + Number(mi)) * 60 + Number(s)) * 1000;
  if (Number.isNaN(ms)) return null;
  return BigInt(ms) * 1000n + BigInt(fraction.padEnd(6, '0').slice(0, 6)) - offsetMicros(zone);
}

/** The unscaled integer of a decimal at `scale` (rounded half away from zero), or null past `precision` digits. */
export function toUnscaled(given: unknown, precision: number, scale: number): bigint | null {
  const value = numberText(given);
  const text =
    typeof value === 'number'
      ? Number.isFinite(value)
        ? String(value)
        : ''
      : typeof value === 'bigint'
        ? String(value)
        : value;
  if (typeof text !== 'string') return null;
  const m = DECIMAL.exec(text.trim());
  if (!m || (m[2] === '' && !m[3])) return null;
  const [, sign, whole = '', fraction = '', exponent = '0'] = m;
  const shift = scale + Number(exponent) - fraction.length;
  let unscaled = BigInt(`${whole}${fraction}` || '0');
  if (shift >= 0) unscaled *= 10n ** BigInt(shift);
  else {
    const divisor = 10n ** BigInt(-shift);
    unscaled = (unscaled + divisor / 2n) / divisor;
  }
  if (unscaled >= 10n ** BigInt(precision)) return null;
  return sign === '-' ? -unscaled : unscaled;
}

/** Bytes of a binary value: a Buffer as it is, PostgreSQL's `\x…` hex text decoded, other text as UTF-8. */
export function toBytes(value: unknown): Uint8Array | null {
  if (value instanceof Uint8Array) return value;
  if (typeof value !== 'string') return null;
  if (/^\\x([0-9a-f]{2})*$/i.test(value)) return Buffer.from(value.slice(2), 'hex');
  return Buffer.from(value, 'utf8');
}

/** Text of a value: a string as it is, anything else as its JSON (bigints as their digits). */
export function toText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v)) ?? String(value);
}
