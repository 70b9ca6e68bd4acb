/**
 * The Postgres source (platform `postgres`): the dataset's target, TLS and
 * credentials are checked when the source is made, the reads themselves
 * (pg-read.ts: COPY, its conversion, pg and the COPY OUT reader) load on the
 * first read, so a gateway that never reads PostgreSQL never loads them.
 */
import { lazyModule } from './lazy.ts';
import { pgCredentials, pgTarget, type SecretReader } from './pg-connection.ts';
import type { PgEndpoint } from './pg-read.ts';
import { pgTls } from './pg-tls.ts';
import type { Source, SourceFactory } from './types.ts';

const pgRead = lazyModule('PostgreSQL', () => import('./pg-read.ts'));

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
      };
    },
  };
}
