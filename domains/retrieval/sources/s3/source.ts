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
import { RetrievalErrors } from '../../errors.ts';
import type { SecretReader } from '../credentials.ts';
import { checkFileColumns, formatOf } from '../formats.ts';
import { neededColumns } from '../scan.ts';
import type { Source, SourceFactory, SourceInput } from '../types.ts';
import { type ObjectStore, type ObjectToRead, objectSchema, scanObjects } from './formats.ts';
import {
  folderPrefix,
  type OpenedStore,
  openS3Store,
  readOpenedStore,
  type S3Location,
  s3Config,
  s3Location,
  withOpenedStore,
} from './store.ts';

async function resolveObjects(
  store: ObjectStore,
  location: S3Location,
  hint: string | null,
  signal: AbortSignal,
): Promise<ObjectToRead[]> {
  if (location.key !== '' && !location.key.endsWith('/')) {
    const single = await store.stat(location.key, signal);
    if (single) {
      const format = formatOf(single.key, hint);
      if (!format)
        throw RetrievalErrors.make.source_unsupported({
          platform: 's3',
          problem: 'unknown object format; set format_hint',
        });
      return [{ entry: single, format }];
    }
  }
  const prefix = folderPrefix(location.key);
  const objects: ObjectToRead[] = [];
  for await (const entry of store.list(prefix, signal)) {
    const format = formatOf(entry.key, hint);
    if (format) objects.push({ entry, format });
  }
  if (objects.length === 0)
    throw RetrievalErrors.make.source_not_found({ problem: 'no object (or no readable object under the prefix)' });
  return objects;
}

/** The dataset's bucket, opened with a client of its own for one call or one read. */
async function openLocation(
  input: SourceInput,
  secrets: SecretReader | undefined,
  endpointHosts: readonly string[],
): Promise<OpenedStore & { location: S3Location }> {
  const location = s3Location(input);
  return { ...(await openS3Store(s3Config(input, secrets, endpointHosts), location.bucket)), location };
}

/** `endpointHosts`: where a credential_override may point the client besides the dataset's endpoint (store.ts). */
export function s3Sources(
  secrets: () => SecretReader | undefined,
  endpointHosts: readonly string[] = [],
): SourceFactory {
  return {
    platforms: ['s3', 's3a'],
    // Columns, filters, offset, limit and batch_size narrow the objects; no option does.
    readerOptions: {},
    describe(input) {
      const { bucket, key } = s3Location(input);
      return {
        path: `s3://${bucket}/${key}`,
        format: key.endsWith('/') ? input.formatHint : formatOf(key, input.formatHint),
      };
    },
    create(input): Source {
      // Validate location and credentials now, so a bad dataset is a 4xx at job creation.
      s3Config(input, secrets(), endpointHosts);
      s3Location(input);
      const open = () => openLocation(input, secrets(), endpointHosts);
      return {
        schema: (signal) =>
          withOpenedStore(open, async ({ store, location }) => {
            const [first] = (await resolveObjects(store, location, input.formatHint, signal)) as [ObjectToRead];
            return objectSchema(store, first.entry, first.format, signal);
          }),
        read: (asked) =>
          readOpenedStore(asked.signal, open, async function* ({ store, location }) {
            const objects = await resolveObjects(store, location, input.formatHint, asked.signal);
            const first = objects[0] as ObjectToRead;
            const request = checkFileColumns(
              await objectSchema(store, first.entry, first.format, asked.signal),
              first.format,
              asked,
            );
            yield* scanObjects(store, objects, request, neededColumns(request));
          }),
      };
    },
  };
}
