/**
 * JSON text to values without changing a number's text: a double holds 15
 * to 17 significant digits, so a number written with more (a PostgreSQL
 * int8 past 2^53, a long numeric) would be rounded, and one written with
 * trailing zeros (a numeric(10,2) `12.50`) would lose them. Such a number is
 * kept as its own text in a raw JSON value (`JSON.rawJSON`, TC39 "JSON.parse
 * source text access"), which `JSON.stringify` writes back as it was read
 * and the Arrow writers read as text (arrow/values.ts): the row path and the
 * inline answer carry the text the source sent, as the byte path does.
 */

interface RawJson {
  readonly rawJSON: string;
}

/** Node's JSON has rawJSON and isRawJSON (V8 11.4); TypeScript's ES2024 library does not declare them yet. */
const json = JSON as typeof JSON & {
  rawJSON(text: string): RawJson;
  isRawJSON(value: unknown): value is RawJson;
};

/**
 * Where a number's text may differ from its double's: a run of 16 digits (a decimal point allowed among
 * them), a fraction ending in 0, an exponent. Only then does the reviver run.
 */
const UNCANONICAL_NUMBER = /\d(?:\.?\d){15}|\.\d*0(?!\d)|\d[eE]/;

function keepText(_key: string, value: unknown, context?: { source?: string }): unknown {
  const source = context?.source;
  return typeof value === 'number' && source !== undefined && String(value) !== source ? json.rawJSON(source) : value;
}

/** JSON.parse, with a number whose text its double would not give back kept as that text. */
export function parseExact(text: string): unknown {
  return UNCANONICAL_NUMBER.test(text)
    ? JSON.parse(text, keepText as (key: string, value: unknown) => unknown)
    : JSON.parse(text);
}

/** A value as the text of the number it holds, when parseExact kept it raw; any other value as it is. */
export function numberText(value: unknown): unknown {
  return typeof value === 'object' && value !== null && json.isRawJSON(value) ? value.rawJSON : value;
}
