/**
 * File format readers for the filesystem source: CSV (csv-parse, header
 * row, cells as text), JSON lines (one object per line) and Parquet
 * (hyparquet, read one slice of rows at a time so memory stays bounded).
 * Each yields raw row batches in file order; scan.ts applies the request.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { pipeline, type Readable } from 'node:stream';
import type { FileMetaData } from 'hyparquet';
import { RetrievalErrors } from '../errors.ts';
import { lazyModule } from './lazy.ts';
import { type ColumnRequest, checkColumns, jsonSafe } from './scan.ts';
import type { Row, SchemaField } from './types.ts';

export type FileFormat = 'csv' | 'jsonl' | 'parquet';

/** The parsers load with the first file of their format, not at start (lazy.ts). */
const csvParser = lazyModule('CSV', () => import('csv-parse'));
export const parquetReader = lazyModule('Parquet', () => import('hyparquet'));

const EXTENSIONS: Readonly<Record<string, FileFormat>> = {
  csv: 'csv',
  jsonl: 'jsonl',
  ndjson: 'jsonl',
  json: 'jsonl',
  parquet: 'parquet',
};

/** `format_hint` wins over the extension (the format is inferred from the extension). */
export function formatOf(path: string, hint: string | null): FileFormat | null {
  if (hint && EXTENSIONS[hint.toLowerCase()]) return EXTENSIONS[hint.toLowerCase()] as FileFormat;
  const dot = path.lastIndexOf('.');
  return dot < 0 ? null : (EXTENSIONS[path.slice(dot + 1).toLowerCase()] ?? null);
}

export interface RawRead {
  /** Columns the caller needs (projection ∪ filter keys); null = all. A format may read fewer columns from disk. */
  readonly needed: readonly string[] | null;
  /** Rows to skip before the first batch, when the format can seek (no filters in play). */
  readonly skip: number;
  readonly batchSize: number;
  readonly signal: AbortSignal;
}

export async function* batchesOf(
  rows: AsyncIterable<Row> | (() => Promise<AsyncIterable<Row>>),
  size: number,
  signal: AbortSignal,
): AsyncGenerator<Row[]> {
  let batch: Row[] = [];
  // A function opens its rows when the first batch is asked for (nothing is opened for a read never iterated).
  for await (const row of typeof rows === 'function' ? await rows() : rows) {
    signal.throwIfAborted();
    batch.push(row);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/**
 * CSV rows of any byte stream (a file, an S3 object body), once the parser
 * has loaded: the parser itself, so no generator sits between it and the
 * reader of every row. Leaving the iteration early (limit reached, abort)
 * destroys the parser, and pipeline() the input with it.
 */
export async function csvOf(input: Readable): Promise<AsyncIterable<Row>> {
  const { parse } = await csvParser().catch((error: unknown) => {
    input.destroy();
    throw error;
  });
  const parser = parse({ columns: true, bom: true, skip_empty_lines: true, relax_column_count: true });
  pipeline(input, parser, () => {});
  return parser;
}

/** JSON-lines rows of any byte stream; the input is destroyed when iteration ends. */
export async function* jsonLinesOf(input: Readable): AsyncGenerator<Row> {
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  try {
    for await (const line of lines) {
      number++;
      if (line.trim() !== '') yield parseLine(line, number);
    }
  } finally {
    lines.close();
    input.destroy();
  }
}

const csvRows = (path: string) => csvOf(createReadStream(path));
const jsonLines = (path: string) => jsonLinesOf(createReadStream(path));

function parseLine(line: string, number: number): Row {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw RetrievalErrors.make.source_unavailable({ problem: 'invalid JSON line', line: number });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw RetrievalErrors.make.source_unavailable({ problem: 'JSON line is not an object', line: number });
  }
  return value as Row;
}

async function* parquetBatches(path: string, read: RawRead): AsyncGenerator<Row[]> {
  const { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } = await parquetReader();
  const file = await asyncBufferFromFile(path);
  const metadata = await parquetMetadataAsync(file);
  const total = Number(metadata.num_rows);
  const columns = read.needed ? [...read.needed] : undefined;
  for (let start = Math.min(read.skip, total); start < total; start += read.batchSize) {
    read.signal.throwIfAborted();
    const rows = await parquetReadObjects({
      file,
      metadata,
      rowStart: start,
      rowEnd: Math.min(total, start + read.batchSize),
      ...(columns ? { columns } : {}),
    });
    yield rows.map((row) => {
      for (const key of Object.keys(row)) row[key] = jsonSafe(row[key]);
      return row as Row;
    });
  }
}

/** Raw batches; `skipped` says how many of read.skip rows the format already skipped. */
export function readFile(
  path: string,
  format: FileFormat,
  read: RawRead,
): { batches: AsyncIterable<Row[]>; skipped: number } {
  if (format === 'parquet') return { batches: parquetBatches(path, read), skipped: read.skip };
  const rows = format === 'csv' ? () => csvRows(path) : jsonLines(path);
  return { batches: batchesOf(rows, read.batchSize, read.signal), skipped: 0 };
}

export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * A Parquet file's columns by their logical type (else the physical one). A
 * timestamp is stored as INT64; its annotation says whether it is an instant
 * (isAdjustedToUTC, as the legacy TIMESTAMP_MILLIS/MICROS annotations always
 * are) or a wall-clock time (Parquet format spec, LogicalTypes "Timestamp").
 */
export async function parquetFields(metadata: FileMetaData): Promise<SchemaField[]> {
  const { parquetSchema } = await parquetReader();
  return parquetSchema(metadata).children.map(({ element }) => {
    const logical = element.logical_type;
    if (logical?.type === 'TIMESTAMP' && !logical.isAdjustedToUTC)
      return { name: element.name, type: 'timestamp without time zone' };
    if (logical?.type === 'TIMESTAMP' || element.converted_type?.startsWith('TIMESTAMP_'))
      return { name: element.name, type: 'timestamp with time zone' };
    return { name: element.name, type: String(logical?.type ?? element.type ?? 'GROUP') };
  });
}

/** Typed schema: Parquet from its metadata; CSV header cells as `string`; JSON lines from the first object. */
export async function fileSchema(path: string, format: FileFormat, signal: AbortSignal): Promise<SchemaField[]> {
  if (format === 'parquet') {
    const { asyncBufferFromFile, parquetMetadataAsync } = await parquetReader();
    return parquetFields(await parquetMetadataAsync(await asyncBufferFromFile(path)));
  }
  signal.throwIfAborted();
  for await (const row of format === 'csv' ? await csvRows(path) : jsonLines(path)) {
    return Object.entries(row).map(([name, value]) => ({ name, type: format === 'csv' ? 'string' : jsonType(value) }));
  }
  return [];
}

/**
 * Files and objects: a JSON-lines file is schemaless (a key absent from a
 * row reads as null), and a file without rows (a CSV of a header only) has
 * nothing to project; anything else is checked against its schema.
 */
export function checkFileColumns<R extends ColumnRequest>(
  fields: readonly SchemaField[],
  format: FileFormat,
  request: R,
): R {
  return format !== 'jsonl' && fields.length > 0 ? checkColumns(fields, request) : request;
}
