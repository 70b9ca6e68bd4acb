/**
 * Filters, offset, limit, projection and re-batching applied in process,
 * for sources that cannot push them down (files, object storage, streams).
 * Equality compares by value for scalars and by text form across types, so
 * a JSON filter `{"year": 2024}` matches the CSV cell "2024".
 */
import { RetrievalErrors } from '../errors.ts';
import type { FilterValue, ReadRequest, Row } from './types.ts';

function sameValue(cell: unknown, wanted: string | number | boolean | null): boolean {
  if (wanted === null) return cell === null || cell === undefined;
  if (cell === null || cell === undefined) return false;
  if (cell === wanted) return true;
  const text =
    typeof cell === 'bigint' || typeof cell === 'number' || typeof cell === 'boolean' || typeof cell === 'string'
      ? String(cell)
      : null;
  return text !== null && text === String(wanted);
}

export function matchesFilters(row: Row, filters: Readonly<Record<string, FilterValue>>): boolean {
  for (const [key, wanted] of Object.entries(filters)) {
    const cell = row[key];
    if (Array.isArray(wanted)) {
      if (!wanted.some((w) => sameValue(cell, w))) return false;
    } else if (!sameValue(cell, wanted as string | number | boolean | null)) return false;
  }
  return true;
}

export function project(row: Row, columns: readonly string[] | null): Row {
  if (columns === null) return row;
  const out: Row = {};
  for (const column of columns) out[column] = row[column] ?? null;
  return out;
}

/** The rows of one raw batch that pass the filters, once `skip.left` passing rows have been skipped. */
function keptRows(rows: readonly Row[], filters: ReadRequest['filters'], skip: { left: number }): readonly Row[] {
  const hasFilters = Object.keys(filters).length > 0;
  const kept = hasFilters ? rows.filter((row) => matchesFilters(row, filters)) : rows;
  const skipped = Math.min(skip.left, kept.length);
  skip.left -= skipped;
  return skipped === 0 ? kept : kept.slice(skipped);
}

/** Applies the request to raw batches in source order and yields batches of at most batchSize rows. */
export async function* scanBatches(raw: AsyncIterable<readonly Row[]>, request: ReadRequest): AsyncGenerator<Row[]> {
  const skip = { left: request.offset };
  let remaining = request.limit ?? Number.POSITIVE_INFINITY;
  let batch: Row[] = [];
  if (remaining <= 0) return;
  for await (const rows of raw) {
    request.signal.throwIfAborted();
    for (const row of keptRows(rows, request.filters, skip)) {
      batch.push(project(row, request.columns));
      remaining--;
      if (batch.length >= request.batchSize || remaining === 0) {
        yield batch;
        batch = [];
      }
      if (remaining === 0) return;
    }
  }
  if (batch.length > 0) yield batch;
}

/** JSON cannot carry bigint; exact integers become numbers, wider ones their decimal text. */
export function jsonSafe(value: unknown): unknown {
  if (typeof value === 'bigint')
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return value;
}

export type ColumnRequest = Pick<ReadRequest, 'columns' | 'filters' | 'gateColumns'>;

/**
 * The request as the source reads it: every column and filter key the
 * caller named must be in the schema (422 unknown_column otherwise); a
 * gate's column the schema lacks is dropped (ReadRequest.gateColumns).
 */
export function checkColumns<R extends ColumnRequest>(fields: readonly { readonly name: string }[], request: R): R {
  const known = new Set(fields.map((f) => f.name));
  const gateOnly = new Set(request.gateColumns ?? []);
  const named = [...(request.columns ?? []).filter((c) => !gateOnly.has(c)), ...Object.keys(request.filters)];
  for (const column of named) {
    if (!known.has(column)) throw RetrievalErrors.make.unknown_column({ column });
  }
  if (request.columns === null || request.columns.every((c) => known.has(c))) return request;
  return { ...request, columns: request.columns.filter((c) => known.has(c)) };
}

/** Columns the reader must return: the projection plus the filter keys; null = all. */
export function neededColumns(request: ColumnRequest): string[] | null {
  return request.columns === null ? null : [...new Set([...request.columns, ...Object.keys(request.filters)])];
}
