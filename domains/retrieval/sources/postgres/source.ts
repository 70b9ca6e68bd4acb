/**
 * The Postgres source (platform `postgres`): the dataset's target, TLS and
 * credentials are checked when the source is made, the reads themselves
 * (read.ts: COPY, its conversion, pg and the COPY OUT reader) load on the
 * first read, so a gateway that never reads PostgreSQL never loads them.
 */

import type { SecretReader } from '../credentials.ts';
import { lazyModule } from '../lazy.ts';
import type { Source, SourceFactory } from '../types.ts';
import { pgCredentials, pgTarget } from './connection.ts';
import type { PgEndpoint } from './read.ts';
import { pgTls } from './tls.ts';

const pgRead = lazyModule('PostgreSQL', () => import('./read.ts'));

export function postgresSources(secrets: () => SecretReader | undefined): SourceFactory {
  return {
    platforms: ['postgres', 'postgresql'],
    // Columns, filters, offset, limit and batch_size narrow the table; no option does.
    readerOptions: {},
    describe: (input) => ({ path: null, format: input.formatHint ?? 'table' }),
    create(input): Source {
      const endpoint: PgEndpoint = {
        target: pgTarget(input),
        ssl: pgTls(input.properties, secrets()),
        credentials: pgCredentials(input, secrets()),
        tag: input.tag,
      };
      const reads = async () => (await pgRead()).postgresReads(endpoint);
      return {
        schema: async (signal) => (await reads()).schema(signal),
        async *readJson(request) {
          yield* (await reads()).readJson(request);
        },
        async *readArrow(request) {
          yield* (await reads()).readArrow(request);
        },
        async *read(request) {
          yield* (await reads()).read(request);
        },
        ranges: async (request, limits) => (await reads()).ranges(request, limits),
      };
    },
  };
}
