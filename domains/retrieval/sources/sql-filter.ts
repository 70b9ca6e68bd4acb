/**
 * The `WHERE` clause of the SQL sources (Postgres, Hive): an AND of
 * equalities, a list value meaning IN and null meaning IS NULL.
 * Each dialect brings its identifier quoting and its literals;
 * only column names checked against the table's schema reach here.
 */
import type { FilterValue } from './types.ts';

export interface SqlDialect {
  identifier(name: string): string;
  /** The value as a literal, or null when it can equal no value of the source (the value is left out). */
  literal(value: string | number | boolean): string | null;
}

function condition(dialect: SqlDialect, column: string, wanted: FilterValue): string {
  const name = dialect.identifier(column);
  const values = Array.isArray(wanted) ? wanted : [wanted];
  const present = values.filter((v): v is string | number | boolean => v !== null);
  const literals = present.map((v) => dialect.literal(v)).filter((l): l is string => l !== null);
  const parts = literals.length > 0 ? [`${name} IN (${literals.join(', ')})`] : [];
  if (present.length < values.length) parts.push(`${name} IS NULL`);
  return parts.length === 0 ? 'FALSE' : `(${parts.join(' OR ')})`;
}

/** ` WHERE …`, or '' without filters. */
export function whereClause(dialect: SqlDialect, filters: Readonly<Record<string, FilterValue>>): string {
  const terms = Object.entries(filters).map(([column, wanted]) => condition(dialect, column, wanted));
  return terms.length > 0 ? ` WHERE ${terms.join(' AND ')}` : '';
}
