/**
 * HiveQL text for the Hive source: identifiers in backquotes (a backquote
 * doubled), string literals in single quotes with Hive's backslash escapes,
 * numbers and booleans as literals. Only columns checked against the
 * table's DESCRIBE output reach here; values never leave a literal.
 */
import type { FilterValue, ReadRequest } from './types.ts';

export const hiveIdentifier = (name: string): string => `\`${name.replaceAll('`', '``')}\``;

const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', "'": "\\'", '\n': '\\n', '\r': '\\r', '\t': '\\t', '\0': '\\0', ';': '\\;' };

export function hiveLiteral(value: string | number | boolean): string {
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return `'${String(value).replace(/[\\'\n\r\t\0;]/g, (c) => ESCAPES[c] as string)}'`;
}

function condition(column: string, wanted: FilterValue): string {
  const name = hiveIdentifier(column);
  const values = Array.isArray(wanted) ? wanted : [wanted];
  const present = values.filter((v): v is string | number | boolean => v !== null);
  const parts = present.length > 0 ? [`${name} IN (${present.map(hiveLiteral).join(', ')})`] : [];
  if (present.length < values.length) parts.push(`${name} IS NULL`);
  return parts.length === 0 ? 'FALSE' : `(${parts.join(' OR ')})`;
}

/** SELECT with projection, WHERE and a LIMIT covering offset + limit (the offset is skipped in process). */
export function hiveSelect(database: string, table: string, request: Pick<ReadRequest, 'columns' | 'filters' | 'offset' | 'limit'>): string {
  const columns = request.columns === null ? '*' : request.columns.map(hiveIdentifier).join(', ');
  let sql = `SELECT ${columns} FROM ${hiveIdentifier(database)}.${hiveIdentifier(table)}`;
  const terms = Object.entries(request.filters).map(([column, wanted]) => condition(column, wanted));
  if (terms.length > 0) sql += ` WHERE ${terms.join(' AND ')}`;
  if (request.limit !== null) sql += ` LIMIT ${request.offset + request.limit}`;
  return sql;
}
