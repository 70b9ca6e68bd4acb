/**
 * The Postgres source (contract §8.6, platform `postgres`): a real
 * PostgreSQL read through a server-side cursor (`DECLARE … CURSOR`, then
 * `FETCH FORWARD n`), one batch prefetched while the previous is sent, so
 * memory stays at two batches whatever the table size. Columns, filters,
 * limit and offset are pushed down; SQL is built only from escaped
 * identifiers and bind parameters, after every column and filter key was
 * checked against the table's schema.
 */
import pg from 'pg';
import { RetrievalErrors } from '../errors.ts';
import { type PgTarget, pgCredentials, pgTarget, type SecretReader } from './pg-connection.ts';
import type { FilterValue, ReadRequest, Row, SchemaField, Source, SourceFactory } from './types.ts';

const { Client, escapeIdentifier } = pg;

/** Rows per FETCH round trip: with one prefetched, at most 2 × this many rows are held. */
const FETCH_ROWS = 5000;

function classify(error: unknown): Error {
  const code = (error as { code?: string }).code;
  if (code === '42P01' || code === '3F000') return RetrievalErrors.make.source_not_found({ problem: 'table not found' });
  if (code === '28P01' || code === '28000') return RetrievalErrors.make.source_unavailable({ problem: 'authentication failed' });
  if (error instanceof Error && error.name === 'ApiError') return error;
  return RetrievalErrors.make.source_unavailable({ problem: code ? `postgres error ${code}` : 'connection failed' });
}

/** `WHERE` clause and its parameters: AND of equality; a list means IN; null means IS NULL. */
export function whereClause(filters: Readonly<Record<string, FilterValue>>, params: unknown[]): string {
  const terms = Object.entries(filters).map(([key, value]) => {
    const column = escapeIdentifier(key);
    const values = Array.isArray(value) ? value : [value];
    const nonNull = values.filter((v) => v !== null);
    const parts = nonNull.length > 0 ? [`${column} IN (${nonNull.map((v) => `$${params.push(v)}`).join(', ')})`] : [];
    if (nonNull.length < values.length) parts.push(`${column} IS NULL`);
    return parts.length === 0 ? 'FALSE' : `(${parts.join(' OR ')})`;
  });
  return terms.length > 0 ? ` WHERE ${terms.join(' AND ')}` : '';
}

export function selectStatement(target: PgTarget, request: Pick<ReadRequest, 'columns' | 'filters' | 'offset' | 'limit'>): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const columns = request.columns === null ? '*' : request.columns.map((c) => escapeIdentifier(c)).join(', ');
  let text = `SELECT ${columns} FROM ${escapeIdentifier(target.schema)}.${escapeIdentifier(target.table)}`;
  text += whereClause(request.filters, values);
  if (request.limit !== null) text += ` LIMIT $${values.push(request.limit)}`;
  if (request.offset > 0) text += ` OFFSET $${values.push(request.offset)}`;
  return { text, values };
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

async function* cursorBatches(client: pg.Client, target: PgTarget, request: ReadRequest): AsyncGenerator<Row[]> {
  checkColumns(await tableSchema(client, target), request);
  const statement = selectStatement(target, request);
  await client.query('BEGIN READ ONLY');
  // A fixed scan start keeps chunk boundaries stable for gRPC resume from a sequence number.
  await client.query('SET LOCAL synchronize_seqscans = off');
  await client.query(`DECLARE meshgate_retrieval NO SCROLL CURSOR FOR ${statement.text}`, statement.values);
  // Fetch in round trips of at least FETCH_ROWS (fewer round trips), hand out batchSize slices.
  const fetchRows = Math.max(request.batchSize, FETCH_ROWS);
  const fetch = `FETCH FORWARD ${fetchRows} FROM meshgate_retrieval`;
  let pending = client.query<Row>(fetch);
  for (;;) {
    const { rows } = await pending;
    if (rows.length === 0) return;
    // Prefetch the next round while this one is gated and sent.
    pending = rows.length === fetchRows ? client.query<Row>(fetch) : Promise.resolve({ rows: [] as Row[] } as pg.QueryResult<Row>);
    pending.catch(() => {}); // observed on the next turn, or dropped with the connection
    for (let i = 0; i < rows.length; i += request.batchSize) {
      request.signal.throwIfAborted();
      yield rows.slice(i, i + request.batchSize);
    }
  }
}

export function postgresSources(secrets: () => SecretReader | undefined): SourceFactory {
  return {
    platforms: ['postgres', 'postgresql'],
    describe: (input) => ({ path: null, format: input.formatHint ?? 'table' }),
    create(input): Source {
      const target = pgTarget(input);
      const credentials = pgCredentials(input, secrets());
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
        async *read(request) {
          const client = await connect(target, credentials, input.tag);
          const stop = () => void client.end().catch(() => {});
          request.signal.addEventListener('abort', stop, { once: true });
          try {
            yield* cursorBatches(client, target, request);
          } catch (error) {
            request.signal.throwIfAborted();
            throw classify(error);
          } finally {
            request.signal.removeEventListener('abort', stop);
            stop();
          }
        },
      };
    },
  };
}
