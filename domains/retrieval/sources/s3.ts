/**
 * The object-storage source (platform `s3`): URN name
 * `bucket/key` reads one object; `bucket/prefix/` (or a key that names no
 * object but has objects under `key/`) reads every CSV, JSON lines or
 * Parquet object under it in key order as one table. Parquet is read by
 * range requests, only the needed column chunks of the needed row groups;
 * CSV and JSON lines stream. Columns and the offset (when no filter is in
 * play) are pushed into the reader; filters are applied in process. One S3
 * client per read, destroyed when the read ends or is aborted.
 */
import { RetrievalErrors } from '../errors.ts';
import { type FileFormat, formatOf } from './fs-formats.ts';
import type { SecretReader } from './pg-connection.ts';
import { type ObjectEntry, type ObjectStore, objectSchema, readObjects } from './s3-formats.ts';
import { classifyS3, openS3Store, type S3Location, s3Config, s3Location } from './s3-store.ts';
import { checkFileColumns, neededColumns, scanBatches } from './scan.ts';
import type { Source, SourceFactory, SourceInput } from './types.ts';

export interface TypedObject {
  readonly entry: ObjectEntry;
  readonly format: FileFormat;
}

async function resolveObjects(store: ObjectStore, location: S3Location, hint: string | null, signal: AbortSignal): Promise<TypedObject[]> {
  if (location.key !== '' && !location.key.endsWith('/')) {
    const single = await store.stat(location.key, signal);
    if (single) {
      const format = formatOf(single.key, hint);
      if (!format) throw RetrievalErrors.make.source_unsupported({ platform: 's3', problem: 'unknown object format; set format_hint' });
      return [{ entry: single, format }];
    }
  }
  const prefix = location.key === '' || location.key.endsWith('/') ? location.key : `${location.key}/`;
  const objects: TypedObject[] = [];
  for await (const entry of store.list(prefix, signal)) {
    const format = formatOf(entry.key, hint);
    if (format) objects.push({ entry, format });
  }
  if (objects.length === 0) throw RetrievalErrors.make.source_not_found({ problem: 'no object (or no readable object under the prefix)' });
  return objects;
}

async function withStore<T>(input: SourceInput, secrets: SecretReader | undefined, use: (store: ObjectStore, location: S3Location) => Promise<T>): Promise<T> {
  const location = s3Location(input);
  const { store, close } = await openS3Store(s3Config(input, secrets), location.bucket);
  try {
    return await use(store, location);
  } finally {
    close();
  }
}

export function s3Sources(secrets: () => SecretReader | undefined): SourceFactory {
  return {
    platforms: ['s3', 's3a'],
    // Columns, filters, offset, limit and batch_size narrow the objects; no option does.
    readerOptions: {},
    describe(input) {
      const { bucket, key } = s3Location(input);
      return { path: `s3://${bucket}/${key}`, format: key.endsWith('/') ? input.formatHint : formatOf(key, input.formatHint) };
    },
    create(input): Source {
      // Validate location and credentials now, so a bad dataset is a 4xx at job creation.
      s3Config(input, secrets());
      s3Location(input);
      const open = <T>(use: (store: ObjectStore, location: S3Location) => Promise<T>) => withStore(input, secrets(), use);
      return {
        schema: (signal) =>
          open(async (store, location) => {
            const [first] = await resolveObjects(store, location, input.formatHint, signal);
            return objectSchema(store, (first as TypedObject).entry, (first as TypedObject).format, signal);
          }),
        async *read(asked) {
          const location = s3Location(input);
          const { store, close } = await openS3Store(s3Config(input, secrets()), location.bucket);
          try {
            const objects = await resolveObjects(store, location, input.formatHint, asked.signal);
            const first = objects[0] as TypedObject;
            const request = checkFileColumns(await objectSchema(store, first.entry, first.format, asked.signal), first.format, asked);
            const filtered = Object.keys(request.filters).length > 0;
            const raw = readObjects(store, objects, {
              needed: neededColumns(request),
              skip: request.offset,
              skipAllowed: !filtered,
              batchSize: request.batchSize,
              signal: request.signal,
            });
            yield* scanBatches(raw, { ...request, offset: filtered ? request.offset : 0 });
          } catch (error) {
            asked.signal.throwIfAborted();
            throw classifyS3(error);
          } finally {
            close();
          }
        },
      };
    },
  };
}
