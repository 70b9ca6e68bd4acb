/**
 * A source's column types to Arrow types (the table in docs/retrieval.md,
 * "Arrow Flight"). A declared type a source reports precisely — PostgreSQL
 * (format_type names), Hive (its DDL names, nested `array<…>`/`struct<…>`)
 * and Parquet (logical or physical types) — maps by name. A type that was
 * itself sampled from a value (JSON lines, Kafka, Slack: `number`,
 * `object`, …) or is unknown is inferred from the first batch's values;
 * what cannot be typed is `utf8`.
 */
import type { Row, SchemaField } from '../sources/types.ts';
import { BOOL, type ColumnType, FLOAT64, MAX_DECIMAL_PRECISION, type NamedType, UTF8 } from './types.ts';

const BY_NAME: Readonly<Record<string, ColumnType>> = {
  // PostgreSQL
  smallint: { kind: 'int', bits: 16 },
  integer: { kind: 'int', bits: 32 },
  bigint: { kind: 'int', bits: 64 },
  real: { kind: 'float', bits: 32 },
  'double precision': FLOAT64,
  // numeric without a declared precision holds any number of digits: exact as text.
  numeric: UTF8,
  boolean: BOOL,
  text: UTF8,
  'character varying': UTF8,
  character: UTF8,
  name: UTF8,
  uuid: UTF8,
  bytea: { kind: 'binary' },
  date: { kind: 'date' },
  'timestamp with time zone': { kind: 'timestamp', zone: 'UTC' },
  'timestamp without time zone': { kind: 'timestamp', zone: null },
  // Hive (tinyint … string; `timestamp` is a wall-clock time, Hive's documented semantics)
  tinyint: { kind: 'int', bits: 8 },
  int: { kind: 'int', bits: 32 },
  float: { kind: 'float', bits: 32 },
  double: FLOAT64,
  string: UTF8,
  binary: { kind: 'binary' },
  timestamp: { kind: 'timestamp', zone: null },
  'timestamp with local time zone': { kind: 'timestamp', zone: 'UTC' },
  // Parquet physical and logical types (hyparquet's names; BYTE_ARRAY is text or bytes by its annotation: inferred)
  int32: { kind: 'int', bits: 32 },
  int64: { kind: 'int', bits: 64 },
  integer_logical: { kind: 'int', bits: 64 },
  utf8: UTF8,
  json: UTF8,
  jsonb: UTF8,
  enum: UTF8,
};

/** Parquet names that differ from the SQL ones above only in case or spelling. */
const PARQUET_ALIASES: Readonly<Record<string, string>> = {
  INTEGER: 'integer_logical',
  STRING: 'utf8',
  BOOLEAN: 'boolean',
  DATE: 'date',
  DOUBLE: 'double',
  FLOAT: 'float',
};

/** Splits `a:int,b:struct<c:int>` at top-level commas. */
function topLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '<' || c === '(') depth++;
    else if (c === '>' || c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts.filter((p) => p !== '');
}

function decimal(precision: number, scale: number): ColumnType {
  const fits = precision >= 1 && precision <= MAX_DECIMAL_PRECISION && scale >= 0 && scale <= precision;
  return fits ? { kind: 'decimal', precision, scale } : UTF8;
}

/**
 * PostgreSQL arrays and composite types: their element and field types are
 * not in the column's type name; sent as their JSON text (`to_json`).
 */
export const PG_JSON_RENDERED: ReadonlySet<string> = new Set(['ARRAY', 'USER-DEFINED']);

/** The Arrow type of a declared source type, or null when the name says nothing precise. */
export function declaredType(name: string): ColumnType | null {
  const trimmed = name.trim();
  if (PG_JSON_RENDERED.has(trimmed)) return UTF8;
  const lower = trimmed.toLowerCase();
  const known = BY_NAME[PARQUET_ALIASES[trimmed] ?? lower];
  if (known) return known;
  const numeric = /^(?:numeric|decimal)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$/.exec(lower);
  if (numeric) return decimal(Number(numeric[1]), Number(numeric[2] ?? 0));
  if (/^(?:var)?char\s*\(\d+\)$/.test(lower)) return UTF8;
  const array = /^array\s*<(.*)>$/s.exec(trimmed);
  if (array) return { kind: 'list', item: declaredType(array[1] as string) ?? UTF8 };
  const struct = /^struct\s*<(.*)>$/s.exec(trimmed);
  if (struct) {
    const fields = topLevel(struct[1] as string).map((part) => {
      const colon = part.indexOf(':');
      return { name: part.slice(0, colon).trim(), type: declaredType(part.slice(colon + 1)) ?? UTF8 };
    });
    return { kind: 'struct', fields };
  }
  return null;
}

/** The type every non-null sample fits, or utf8 when they disagree (or none is typed). */
export function inferredType(samples: readonly unknown[]): ColumnType {
  const present = samples.filter((v) => v !== null && v !== undefined);
  if (present.length === 0) return UTF8;
  if (present.every((v) => typeof v === 'number')) return FLOAT64;
  if (present.every((v) => typeof v === 'bigint')) return { kind: 'int', bits: 64 };
  if (present.every((v) => typeof v === 'boolean')) return BOOL;
  if (present.every((v) => v instanceof Date)) return { kind: 'timestamp', zone: 'UTC' };
  if (present.every((v) => v instanceof Uint8Array)) return { kind: 'binary' };
  if (present.every(Array.isArray)) return { kind: 'list', item: inferredType((present as unknown[][]).flat()) };
  if (
    present.every(
      (v) => typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date) && !(v instanceof Uint8Array),
    )
  ) {
    const objects = present as Record<string, unknown>[];
    const names = [...new Set(objects.flatMap((o) => Object.keys(o)))];
    return { kind: 'struct', fields: names.map((name) => ({ name, type: inferredType(objects.map((o) => o[name])) })) };
  }
  return UTF8;
}

/**
 * The stream's columns: the caller's columns (or the schema's, plus any
 * other key the first batch holds), each with its declared type when the
 * source has a precise one, else inferred from the first batch.
 */
export function streamColumns(
  schema: readonly SchemaField[],
  columns: readonly string[] | null,
  sample: readonly Row[],
): NamedType[] {
  const declared = new Map(schema.map((f) => [f.name, f.type]));
  const names = columns ?? [...new Set([...schema.map((f) => f.name), ...sample.flatMap((row) => Object.keys(row))])];
  return names.map((name) => {
    const source = declared.get(name);
    const type = (source !== undefined && declaredType(source)) || inferredType(sample.map((row) => row[name]));
    return { name, type };
  });
}
