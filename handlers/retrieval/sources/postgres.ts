/**
 * The Postgres source (contract §8.6, platform `postgres`): a real
 * PostgreSQL read with `COPY (SELECT row_to_json(…) …) TO STDOUT`, so the
 * server renders each row as JSON and an ungated stream sends those bytes
 * without the gateway building row objects (`readJson`; docs/retrieval.md
 * "Throughput choices"). Memory stays at the COPY buffer plus one batch
 * whatever the table size. Columns, filters, limit and offset are pushed
 * down; the SQL is built only from escaped identifiers and escaped literals,
 * after every column and filter key was checked against the table's schema.
 */
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { RetrievalErrors } from '../errors.ts';
import { type PgTarget, pgCredentials, pgTarget, type SecretReader } from './pg-connection.ts';
import { copyLineBatches } from './pg-copy.ts';
import { type SqlDialect, whereClause } from './sql-filter.ts';
import type { ReadRequest, Row, SchemaField, Source, SourceFactory } from './types.ts';

const { Client, escapeIdentifier, escapeLiteral } = pg;

/** COPY bytes buffered ahead of the consumer before the socket is paused. */
const COPY_BUFFER = { highWaterMark: 1 << 20 };

function classify(error: unknown): Error {
  const code = (error as { code?: string }).code;
  if (code === '42P01' || code === '3F000') return RetrievalErrors.make.source_not_found({ problem: 'table not found' });
  if (code === '28P01' || code === '28000') return RetrievalErrors.make.source_unavailable({ problem: 'authentication failed' });
  if (error instanceof Error && error.name === 'ApiError') return error;
  return RetrievalErrors.make.source_unavailable({ problem: code ? `postgres error ${code}` : 'connection failed' });
}

/**
 * Filter values as quoted literals (COPY takes no bind parameters): an
 * untyped quoted literal is coerced to the column's type as a text
 * parameter was, so `int_col IN ('5')` matches 5. PostgreSQL text cannot
 * hold a NUL character, so a value with one equals nothing and is left out.
 */
const PG_DIALECT: SqlDialect = {
  identifier: escapeIdentifier,
  literal: (value) => {
    const text = String(value);
    return text.includes('\0') ? null : escapeLiteral(text);
  },
};

function count(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`${what} must be a non-negative integer`);
  return value;
}

/** The pushed-down SELECT, with identifiers escaped and every value a literal. */
export function selectStatement(target: PgTarget, request: Pick<ReadRequest, 'columns' | 'filters' | 'offset' | 'limit'>): string {
  // Distinct names: a row object holds each column once, and so must row_to_json's.
  const columns = request.columns === null ? '*' : [...new Set(request.columns)].map((c) => escapeIdentifier(c)).join(', ');
  let text = `SELECT ${columns} FROM ${escapeIdentifier(target.schema)}.${escapeIdentifier(target.table)}`;
  text += whereClause(PG_DIALECT, request.filters);
  if (request.limit !== null) text += ` LIMIT ${count(request.limit, 'limit')}`;
  if (request.offset > 0) text += ` OFFSET ${count(request.offset, 'offset')}`;
  return text;
}

async function connect(target: PgTarget, credentials: { user: string; password: string | undefined }, tag: string): Promise<pg.Client> {
  const client = new Client({ ...target.connection, ...credentials, application_name: tag.slice(0, 63), connectionTimeoutMillis: 10_000 });
  client.on('error', () => {}); // a dropped connection surfaces on the pending query
  try {
    await client.connect();
  } catch (error) {
    throw classify(error);
  }
  return client;
}

async function tableSchema(client: pg.Client, target: PgTarget): Promise<SchemaField[]> {
  const result = await client.query<{ name: string; type: string }>(
    'SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
    [target.schema, target.table],
  );
  if (result.rows.length === 0) throw RetrievalErrors.make.source_not_found({ problem: 'table not found' });
  return result.rows;
}

function checkColumns(fields: readonly SchemaField[], request: ReadRequest): void {
  const known = new Set(fields.map((f) => f.name));
  for (const column of [...(request.columns ?? []), ...Object.keys(request.filters)]) {
    if (!known.has(column)) throw RetrievalErrors.make.unknown_column({ column });
  }
}

/**
 * Rows as JSON made by PostgreSQL: `COPY (SELECT row_to_json(…) FROM (…))
 * TO STDOUT` in one read-only transaction. The socket is read only as fast
 * as batches are taken (pg-copy-streams pauses it when its buffer is full).
 */
async function* copyJsonBatches(client: pg.Client, target: PgTarget, request: ReadRequest): AsyncGenerator<string[]> {
  checkColumns(await tableSchema(client, target), request);
  const select = selectStatement(target, request);
  // A fixed scan start keeps chunk boundaries stable for gRPC resume from a sequence number;
  // UTC makes timestamptz text the same whatever the server's TimeZone.
  await client.query("BEGIN READ ONLY; SET LOCAL synchronize_seqscans = off; SET LOCAL TimeZone = 'UTC'");
  const copy = client.query(copyTo(`COPY (SELECT row_to_json(meshgate_row.*) FROM (${select}) meshgate_row) TO STDOUT`, COPY_BUFFER));
  yield* copyLineBatches(copy, request.batchSize, request.signal);
}

export function postgresSources(secrets: () => SecretReader | undefined): SourceFactory {
  return {
    platforms: ['postgres', 'postgresql'],
    describe: (input) => ({ path: null, format: input.formatHint ?? 'table' }),
    create(input): Source {
      const target = pgTarget(input);
      const credentials = pgCredentials(input, secrets());
      async function* readJson(request: ReadRequest): AsyncGenerator<string[]> {
        const client = await connect(target, credentials, input.tag);
        // Mid-COPY the server is blocked sending, not reading a Terminate: only closing the socket ends it.
        const stop = () => client.connection.stream.destroy();
        request.signal.addEventListener('abort', stop, { once: true });
        let complete = false;
        try {
          yield* copyJsonBatches(client, target, request);
          complete = true;
        } catch (error) {
          request.signal.throwIfAborted();
          throw classify(error);
        } finally {
          request.signal.removeEventListener('abort', stop);
          if (complete) void client.end().catch(() => {});
          else stop();
        }
      }
      return {
        async schema() {
          const client = await connect(target, credentials, input.tag);
          try {
            return await tableSchema(client, target);
          } catch (error) {
            throw classify(error);
          } finally {
            await client.end().catch(() => {});
          }
        },
        readJson,
        // One path for both: gated reads see exactly the values ungated streams send.
        async *read(request) {
          for await (const lines of readJson(request)) yield lines.map((line) => JSON.parse(line) as Row);
        },
      };
    },
  };
}
