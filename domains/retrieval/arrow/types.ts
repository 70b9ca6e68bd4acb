/**
 * The Arrow types a retrieval column can take (docs/retrieval.md, "Arrow
 * Flight"), as a small closed description the column writers and the
 * schema are both built from. Anything a source cannot type precisely is
 * `utf8`: a string as it is, any other value as its JSON text.
 */
import {
  Binary,
  Bool,
  type DataType,
  DateDay,
  Decimal,
  Field,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  List,
  Struct,
  TimestampMicrosecond,
  Utf8,
} from 'apache-arrow';

export type ColumnType =
  | { readonly kind: 'int'; readonly bits: 8 | 16 | 32 | 64 }
  | { readonly kind: 'float'; readonly bits: 32 | 64 }
  | { readonly kind: 'bool' }
  | { readonly kind: 'utf8' }
  | { readonly kind: 'binary' }
  | { readonly kind: 'date' }
  /** Microseconds since the epoch; `zone` null = a wall-clock time without a zone. */
  | { readonly kind: 'timestamp'; readonly zone: string | null }
  /** 128-bit decimal (Arrow's precision limit is 38 digits). */
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number }
  | { readonly kind: 'list'; readonly item: ColumnType }
  | { readonly kind: 'struct'; readonly fields: readonly NamedType[] };

export interface NamedType {
  readonly name: string;
  readonly type: ColumnType;
}

export const UTF8: ColumnType = { kind: 'utf8' };
export const FLOAT64: ColumnType = { kind: 'float', bits: 64 };
export const BOOL: ColumnType = { kind: 'bool' };
export const MAX_DECIMAL_PRECISION = 38;

const INTS = { 8: Int8, 16: Int16, 32: Int32, 64: Int64 } as const;

export function arrowType(type: ColumnType): DataType {
  switch (type.kind) {
    case 'int':
      return new INTS[type.bits]();
    case 'float':
      return type.bits === 32 ? new Float32() : new Float64();
    case 'bool':
      return new Bool();
    case 'utf8':
      return new Utf8();
    case 'binary':
      return new Binary();
    case 'date':
      return new DateDay();
    case 'timestamp':
      return new TimestampMicrosecond(type.zone);
    case 'decimal':
      return new Decimal(type.scale, type.precision, 128);
    case 'list':
      return new List(new Field('item', arrowType(type.item), true));
    case 'struct':
      return new Struct(type.fields.map(arrowField));
  }
}

export function arrowField({ name, type }: NamedType): Field {
  return new Field(name, arrowType(type), true);
}
