/**
 * CSV, JSON lines and Parquet read from an object store (S3, or a directory
 * tree for Hive-partitioned layouts): CSV and JSON lines stream the object
 * body; Parquet is read through ranged reads (hyparquet's AsyncBuffer), one
 * row group at a time, fetching only the column chunks the request needs
 * (range requests, not whole-object downloads). Each reader
 * yields raw batches in object order; scan.ts applies the request.
 */
import type { Readable } from 'node:stream';
import type { AsyncBuffer, FileMetaData } from 'hyparquet';
import {
  batchesOf,
  csvOf,
  type FileFormat,
  jsonLinesOf,
  jsonType,
  parquetFields,
  parquetReader,
  type RawRead,
} from '../formats.ts';
import { jsonSafe, scanBatches } from '../scan.ts';
import type { ReadRequest, Row, SchemaField } from '../types.ts';

export interface ObjectEntry {
  readonly key: string;
  readonly size: number;
}

/** An object of a table, its format, and (Hive layouts) the partition values its rows carry. */
export interface ObjectToRead {
  readonly entry: ObjectEntry;
  readonly format: FileFormat;
  readonly extra?: Row;
}

/** What the format readers need of a store; S3 and the local file system implement it. */
export interface ObjectStore {
  /** Objects under a key prefix, in key order. */
  list(prefix: string, signal: AbortSignal): AsyncIterable<ObjectEntry>;
  /** Size of one object, or null when there is none. */
  stat(key: string, signal: AbortSignal): Promise<ObjectEntry | null>;
  /** The whole body as a stream (CSV, JSON lines). */
  open(key: string, signal: AbortSignal): Promise<Readable>;
  /** Byte ranges of the object on demand (Parquet). */
  ranged(entry: ObjectEntry, signal: AbortSignal): AsyncBuffer;
}

async function* streamedRows(
  store: ObjectStore,
  key: string,
  format: 'csv' | 'jsonl',
  signal: AbortSignal,
): AsyncGenerator<Row> {
  const body = await store.open(key, signal);
  yield* format === 'csv' ? await csvOf(body) : jsonLinesOf(body);
}

// A footer is usually a few KiB: fetch 64 KiB, not hyparquet's 512 KiB default. Read once per store.
const FOOTER_FETCH = 64 * 1024;
const footers = new WeakMap<ObjectStore, Map<string, Promise<FileMetaData>>>();

function footerOf(store: ObjectStore, entry: ObjectEntry, signal: AbortSignal): Promise<FileMetaData> {
  const known = footers.get(store) ?? new Map<string, Promise<FileMetaData>>();
  footers.set(store, known);
  let metadata = known.get(entry.key);
  if (!metadata) {
    const file = store.ranged(entry, signal);
    metadata = parquetReader().then((p) => p.parquetMetadataAsync(file, { initialFetchSize: FOOTER_FETCH }));
    known.set(entry.key, metadata);
  }
  return metadata;
}

function toRows(rows: Record<string, unknown>[]): Row[] {
  for (const row of rows) for (const key of Object.keys(row)) row[key] = jsonSafe(row[key]);
  return rows;
}

/** Row groups whose rows all come before `skip` are never fetched; a row group is sliced into batches. */
async function* parquetBatches(file: AsyncBuffer, metadata: FileMetaData, read: RawRead): AsyncGenerator<Row[]> {
  const { parquetReadObjects } = await parquetReader();
  const columns = read.needed ? [...read.needed] : undefined;
  let groupStart = 0;
  for (const group of metadata.row_groups) {
    const groupEnd = groupStart + Number(group.num_rows);
    const first = Math.max(groupStart, read.skip);
    if (first < groupEnd) {
      read.signal.throwIfAborted();
      const rows = toRows(
        await parquetReadObjects({
          file,
          metadata,
          rowStart: first,
          rowEnd: groupEnd,
          ...(columns ? { columns } : {}),
        }),
      );
      for (let i = 0; i < rows.length; i += read.batchSize) yield rows.slice(i, i + read.batchSize);
    }
    groupStart = groupEnd;
  }
}

/** Raw batches of one object; `skipped` says how many of read.skip rows the format already skipped. */
export async function readObject(
  store: ObjectStore,
  entry: ObjectEntry,
  format: FileFormat,
  read: RawRead,
): Promise<{ batches: AsyncIterable<Row[]>; skipped: number }> {
  if (format === 'parquet') {
    const metadata = await footerOf(store, entry, read.signal);
    return {
      batches: parquetBatches(store.ranged(entry, read.signal), metadata, read),
      skipped: Math.min(read.skip, Number(metadata.num_rows)),
    };
  }
  return {
    batches: batchesOf(streamedRows(store, entry.key, format, read.signal), read.batchSize, read.signal),
    skipped: 0,
  };
}

/**
 * Typed schema of one object: Parquet from its footer; CSV header cells as `string`; JSON lines from the first object.
 */
export async function objectSchema(
  store: ObjectStore,
  entry: ObjectEntry,
  format: FileFormat,
  signal: AbortSignal,
): Promise<SchemaField[]> {
  if (format === 'parquet') {
    const metadata = await footerOf(store, entry, signal);
    return parquetFields(metadata);
  }
  for await (const row of streamedRows(store, entry.key, format, signal)) {
    return Object.entries(row).map(([name, value]) => ({ name, type: format === 'csv' ? 'string' : jsonType(value) }));
  }
  return [];
}

/** Several objects read as one table, in order; `read.skip` rows are pushed into each object while it can take them. */
async function* readObjects(
  store: ObjectStore,
  objects: readonly ObjectToRead[],
  read: RawRead,
): AsyncGenerator<Row[]> {
  let skip = read.skip;
  for (const { entry, format, extra } of objects) {
    read.signal.throwIfAborted();
    const raw = await readObject(store, entry, format, { ...read, skip });
    skip -= raw.skipped;
    for await (const batch of raw.batches) {
      const rows = extra ? batch.map((row) => ({ ...row, ...extra })) : batch;
      if (skip > 0) {
        const dropped = Math.min(skip, rows.length);
        skip -= dropped;
        if (dropped < rows.length) yield rows.slice(dropped);
      } else yield rows;
    }
  }
}

/**
 * A checked request over several objects as one table: the readers return
 * `needed` columns; the offset is pushed into them unless a filter is in
 * play (the skipped rows must be the first matching ones, which only the
 * scan can tell), and the scan applies the rest.
 */
export function scanObjects(
  store: ObjectStore,
  objects: readonly ObjectToRead[],
  request: ReadRequest,
  needed: string[] | null,
): AsyncGenerator<Row[]> {
  const filtered = Object.keys(request.filters).length > 0;
  const skip = filtered ? 0 : request.offset;
  const raw = readObjects(store, objects, { needed, skip, batchSize: request.batchSize, signal: request.signal });
  return scanBatches(raw, { ...request, offset: request.offset - skip });
}
