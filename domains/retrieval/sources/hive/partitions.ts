/**
 * Hive-partitioned directory layouts: `location` (or
 * `path`) names a directory under the allowed roots, or an `s3://bucket/prefix`,
 * whose data files sit in `key=value/` folders (values %-escaped as Hive
 * writes them). Partition keys become string columns after the file's own
 * columns. Filters on partition keys prune whole folders before any file is
 * opened; the remaining files are read like the filesystem and S3 sources
 * (CSV, JSON lines, Parquet by ranges), files and folders starting with
 * `_` or `.` (`_SUCCESS`, `.crc`) ignored.
 */
import { createReadStream, type Dirent } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { RetrievalErrors } from '../../errors.ts';
import type { SecretReader } from '../credentials.ts';
import { allowedPath } from '../filesystem/path.ts';
import { type FileFormat, formatOf } from '../formats.ts';
import { type ObjectEntry, type ObjectStore, type ObjectToRead, objectSchema, scanObjects } from '../s3/formats.ts';
import {
  folderPrefix,
  type OpenedStore,
  openS3Store,
  readOpenedStore,
  s3Config,
  withOpenedStore,
} from '../s3/store.ts';
import { checkColumns, matchesFilters, neededColumns } from '../scan.ts';
import type { ReadRequest, Row, SchemaField, Source, SourceInput } from '../types.ts';

/** A data file of the layout; `extra` holds partition key → value, from the folders above the file. */
type PartitionFile = ObjectToRead & { readonly extra: Row };

/** An ObjectStore over a directory tree: keys are paths relative to the root, `/`-separated. */
export function directoryStore(root: string): ObjectStore {
  async function* walk(dir: string, prefix: string): AsyncGenerator<ObjectEntry> {
    const entries: Dirent[] = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const key = `${prefix}${entry.name}`;
      // Links are never followed: the allowed roots stay the boundary (filesystem/path.ts).
      if (entry.isDirectory()) yield* walk(join(dir, entry.name), `${key}/`);
      else if (entry.isFile()) yield { key, size: (await lstat(join(dir, entry.name))).size };
    }
  }
  return {
    list: (prefix) => walk(join(root, prefix), prefix),
    async stat(key) {
      const info = await lstat(join(root, key)).catch(() => null);
      return info?.isFile() ? { key, size: info.size } : null;
    },
    open: async (key) => createReadStream(join(root, key)),
    ranged: (entry) => ({
      byteLength: entry.size,
      async slice(start, end = entry.size) {
        const handle = await open(join(root, entry.key), 'r');
        try {
          const bytes = Buffer.alloc(end - start);
          await handle.read(bytes, 0, bytes.length, start);
          return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer;
        } finally {
          await handle.close();
        }
      },
    }),
  };
}

function unescapeHive(value: string): string {
  return value.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** The file's partition values, or null when it is not a data file of the layout. */
function partitionOf(relative: string, hint: string | null): { values: Row; format: FileFormat } | null {
  const parts = relative.split('/');
  if (parts.some((p) => p.startsWith('_') || p.startsWith('.'))) return null;
  const format = formatOf(parts.at(-1) as string, hint);
  if (!format) return null;
  const values: Row = {};
  for (const folder of parts.slice(0, -1)) {
    const eq = folder.indexOf('=');
    if (eq <= 0) return null;
    values[unescapeHive(folder.slice(0, eq))] = unescapeHive(folder.slice(eq + 1));
  }
  return { values, format };
}

interface Layout extends OpenedStore {
  readonly prefix: string;
}

async function layoutOf(
  input: SourceInput,
  roots: readonly string[],
  secrets: SecretReader | undefined,
  endpointHosts: readonly string[],
): Promise<Layout> {
  const raw = input.properties.location ?? input.properties.path;
  if (typeof raw !== 'string' || raw === '') throw RetrievalErrors.make.dataset_location_missing();
  const s3 = /^s3a?:\/\/([^/]+)\/?(.*)$/.exec(raw);
  if (s3) {
    const { store, close } = await openS3Store(s3Config(input, secrets, endpointHosts), s3[1] as string);
    return { store, prefix: folderPrefix(s3[2] as string), close };
  }
  const root = await allowedPath(raw, roots);
  if (!(await lstat(root)).isDirectory())
    throw RetrievalErrors.make.source_options_invalid({
      option: 'location',
      problem: 'a directory of key=value/ folders',
    });
  return { store: directoryStore(root), prefix: '', close: () => {} };
}

/** Every data file, and the partition keys in folder order. */
async function filesOf(
  layout: Layout,
  hint: string | null,
  signal: AbortSignal,
): Promise<{ files: PartitionFile[]; keys: string[] }> {
  const files: PartitionFile[] = [];
  for await (const entry of layout.store.list(layout.prefix, signal)) {
    const found = partitionOf(entry.key.slice(layout.prefix.length), hint);
    if (found) files.push({ entry, format: found.format, extra: found.values });
  }
  if (files.length === 0) throw RetrievalErrors.make.source_not_found({ problem: 'no data file under the location' });
  return { files, keys: Object.keys((files[0] as PartitionFile).extra) };
}

async function schemaOf(
  layout: Layout,
  files: PartitionFile[],
  keys: string[],
  signal: AbortSignal,
): Promise<SchemaField[]> {
  const first = files[0] as PartitionFile;
  const own = (await objectSchema(layout.store, first.entry, first.format, signal)).filter(
    (f) => !keys.includes(f.name),
  );
  return [...own, ...keys.map((name) => ({ name, type: 'string' }))];
}

async function* readLayout(layout: Layout, asked: ReadRequest, hint: string | null): AsyncGenerator<Row[]> {
  const { files, keys } = await filesOf(layout, hint, asked.signal);
  const onKeys = Object.fromEntries(Object.entries(asked.filters).filter(([k]) => keys.includes(k)));
  const kept = files.filter((f) => matchesFilters(f.extra, onKeys));
  // The schema comes from a file the read keeps, so a pruned partition is never opened.
  const fields = await schemaOf(layout, kept.length > 0 ? kept : files, keys, asked.signal);
  const request = checkColumns(fields, asked);
  const needed = neededColumns(request);
  const fromFiles = needed?.filter((c) => !keys.includes(c)) ?? null;
  // A projection of partition keys only still needs one file column to count rows.
  const fileColumns = fromFiles !== null && fromFiles.length === 0 ? [(fields[0] as SchemaField).name] : fromFiles;
  yield* scanObjects(layout.store, kept, request, fileColumns);
}

export async function hivePartitionSource(
  input: SourceInput,
  roots: readonly string[],
  secrets: SecretReader | undefined,
  endpointHosts: readonly string[],
): Promise<Source> {
  const open = () => layoutOf(input, roots, secrets, endpointHosts);
  // Refuse a bad location (outside the roots, no such directory) at job creation.
  (await open()).close();
  return {
    schema: (signal) =>
      withOpenedStore(open, async (layout) => {
        const { files, keys } = await filesOf(layout, input.formatHint, signal);
        return schemaOf(layout, files, keys, signal);
      }),
    read: (request) => readOpenedStore(request.signal, open, (layout) => readLayout(layout, request, input.formatHint)),
  };
}
