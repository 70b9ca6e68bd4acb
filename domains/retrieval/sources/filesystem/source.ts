/**
 * The filesystem source (platform `file`): the dataset's
 * `properties.path` (or `location`, or the URN name) read as CSV, JSON lines
 * or Parquet, only under the allowed roots. Columns and the offset are
 * pushed into the Parquet reader; filters are applied in process.
 */
import { RetrievalErrors } from '../../errors.ts';
import { checkFileColumns, fileSchema, formatOf, readFile } from '../formats.ts';
import { neededColumns, scanBatches } from '../scan.ts';
import type { Source, SourceFactory, SourceInput } from '../types.ts';
import { allowedPath } from './path.ts';

function locationOf(input: SourceInput): string | null {
  const { path, location } = input.properties;
  if (typeof path === 'string' && path) return path;
  if (typeof location === 'string' && location) return location;
  return input.name.startsWith('/') ? input.name : null;
}

export function filesystemSources(roots: readonly string[]): SourceFactory {
  return {
    platforms: ['file', 'filesystem', 'local'],
    // Columns, filters, offset, limit and batch_size narrow a file; no option does.
    readerOptions: {},
    describe(input) {
      const path = locationOf(input);
      return { path, format: path ? formatOf(path, input.formatHint) : null };
    },
    async create(input): Promise<Source> {
      // A file is read with the gateway's own access: an override would replace nothing, so it is refused, not ignored.
      if (input.credentialOverride)
        throw RetrievalErrors.make.credential_override_not_accepted({ platform: input.platform });
      const location = locationOf(input);
      if (!location) throw RetrievalErrors.make.dataset_location_missing();
      const format = formatOf(location, input.formatHint);
      if (!format)
        throw RetrievalErrors.make.source_unsupported({
          platform: input.platform,
          problem: 'unknown file format',
          path: location,
        });
      const path = await allowedPath(location, roots);
      return {
        schema: (signal) => fileSchema(path, format, signal),
        async *read(asked) {
          const filtered = Object.keys(asked.filters).length > 0;
          // As every source with a schema: a column or filter key the file does not have is 422, not a column of nulls.
          // The schema costs an open, so it is read only when there is something to check (JSON lines have no schema).
          const checked = format !== 'jsonl' && (asked.columns !== null || filtered);
          const request = checked
            ? checkFileColumns(await fileSchema(path, format, asked.signal), format, asked)
            : asked;
          const needed = neededColumns(request);
          const raw = readFile(path, format, {
            needed,
            skip: filtered ? 0 : request.offset,
            batchSize: request.batchSize,
            signal: request.signal,
          });
          yield* scanBatches(raw.batches, { ...request, offset: request.offset - raw.skipped });
        },
      };
    },
  };
}
