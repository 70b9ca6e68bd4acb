/**
 * HiveQL text for the Hive source: identifiers in backquotes (a backquote
 * doubled), string literals in single quotes with Hive's backslash escapes,
 * numbers and booleans as literals. Only columns checked against the
 * table's DESCRIBE output reach here; values never leave a literal.
 */
import { whereClause } from '../sql-filter.ts';
import type { ReadRequest } from '../types.ts';

export const hiveIdentifier = (name: string): string => `\`${name.replaceAll('`', '``')}\``;

// NUL as three octal digits: Hive reads `\0` and two more digits as one octal escape (`\0` then "12" is a newline).
const ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\\\',
  "'": "\\'",
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\0': '\\000',
  ';': '\\;',
};

export function hiveLiteral(value: string | number | boolean): string {
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return `'${String(value).replace(/[\\'\n\r\t\0;]/g, (c) => ESCAPES[c] as string)}'`;
}

/** SELECT with projection, WHERE and a LIMIT covering offset + limit (the offset is skipped in process). */
export function hiveSelect(
  database: string,
  table: string,
  request: Pick<ReadRequest, 'columns' | 'filters' | 'offset' | 'limit'>,
): string {
  const columns = request.columns === null ? '*' : request.columns.map(hiveIdentifier).join(', ');
  let sql = `SELECT ${columns} FROM ${hiveIdentifier(database)}.${hiveIdentifier(table)}`;
  sql += whereClause({ identifier: hiveIdentifier, literal: hiveLiteral }, request.filters);
  if (request.limit !== null) sql += ` LIMIT ${request.offset + request.limit}`;
  return sql;
}
