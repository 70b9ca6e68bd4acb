/**
 * The Postgres source's reads (postgres.ts loads this module, and pg with
 * it, on a dataset's first read): a real PostgreSQL read with `COPY (SELECT …) TO STDOUT`, its text rows converted
 * byte by byte to the JSON row_to_json would give (copy.ts), so an
 * ungated stream sends those bytes without the gateway building row objects
 * (`readJson`; docs/retrieval.md "Throughput choices"); an Arrow read is a
 * binary COPY decoded into column buffers (`readArrow`, arrow.ts). Memory stays at the socket's
 * chunk plus the batches it completed (two wait before the socket pauses) whatever the table size.
 * Columns, filters, limit and offset are pushed down; the SQL is built only from escaped identifiers and
 * escaped literals,
 * after every column and filter key was checked against the table's schema,
 * which is read in the COPY's own transaction (catalog.ts). TLS to the
 * server is tls.ts's.
 */
import pg from 'pg';
import { RetrievalErrors } from '../../errors.ts';
import { parseExact } from '../../exact-json.ts';
import { lazyModule } from '../lazy.ts';
import { checkColumns } from '../scan.ts';
import { type SqlDialect, whereClause } from '../sql-filter.ts';
import { tlsProblem } from '../tls-trust.ts';
import type { ReadRange, ReadRequest, Row, Source, SplitLimits } from '../types.ts';
import { lockedColumns, type PgColumn, relationName } from './catalog.ts';
import type { PgCredentials, PgTarget } from './connection.ts';
import { type CopyColumn, CopyJsonConverter, type CopyReader, copyKind } from './copy.ts';
import { CopyOut } from './copy-out.ts';
import type { PgTls } from './tls.ts';

const { Client, escapeIdentifier, escapeLiteral } = pg;

/** The binary COPY → Arrow conversion, loaded with the first Flight read (which has loaded Arrow already). */
const pgArrow = lazyModule('Arrow', () => import('./arrow.ts'));

function classify(error: unknown): Error {
  if (error instanceof Error && error.name === 'ApiError') return error;
  const code = (error as { code?: string }).code;
  if (code === '42P01' || code === '3F000')
    return RetrievalErrors.make.source_not_found({ problem: 'table not found' });
  // A wrong password, an unknown role, or no pg_hba rule admitting this connection: the dataset's to fix.
  if (code === '28P01' || code === '28000') {
    return RetrievalErrors.make.source_auth_failed({ problem: 'authentication failed' });
  }
  // Insufficient privilege: on the table, a selected column, or CONNECT on the database. Never names the role.
  if (code === '42501')
    return RetrievalErrors.make.source_access_denied({ problem: "the dataset's credentials may not read this table" });
  const tls = tlsProblem(error);
  if (tls) return RetrievalErrors.make.source_tls_failed({ problem: tls });
  // A literal the column's type cannot take (class 22 raised while parsing: it carries a `position`;
  // a view failing at run time does not), or a type without `=` (json, point): the caller's filter.
  const atParse = (error as { position?: string }).position !== undefined;
  if ((code?.startsWith('22') && atParse) || code === '42883' || code === '42725') {
    return RetrievalErrors.make.filter_value_invalid({ problem: `postgres error ${code}` });
  }
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

/**
 * The rows on heap pages [from, to) (a TID Range Scan since PostgreSQL 14: only those pages are read). The
 * last slice has no end, so a row added to the table since the read was split is still read.
 */
function pageRange({ from, to }: ReadRange): string {
  const start = `ctid >= '(${count(from, 'range')},0)'::tid`;
  return to === null ? start : `${start} AND ctid < '(${count(to, 'range')},0)'::tid`;
}

/**
 * A table's (or materialized view's) size in heap pages, or null for a relation without its own heap pages
 * (a view, a foreign or partitioned table), whose rows cannot be sliced by ctid.
 */
const PAGES_SQL = `
  SELECT CASE WHEN c.relkind IN ('r', 'm')
              THEN pg_relation_size(c.oid) / current_setting('block_size')::bigint END AS pages
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = $1 AND c.relname = $2`;

/** Heap page ranges of about equal size, at most `limits` allow; none when the table is too small to split. */
export function pageRanges(pages: number, limits: SplitLimits): ReadRange[] {
  const parts = Math.min(limits.flightEndpointsMax, Math.floor(pages / limits.flightEndpointMinPages));
  if (parts < 2) return [];
  return Array.from({ length: parts }, (_, i) => ({
    from: Math.floor((i * pages) / parts),
    to: i === parts - 1 ? null : Math.floor(((i + 1) * pages) / parts),
  }));
}

/** Where and as whom a dataset's connections go. */
export interface PgEndpoint {
  readonly target: PgTarget;
  readonly ssl: PgTls;
  readonly credentials: PgCredentials;
  /** application_name, to observe one job's connections. */
  readonly tag: string;
}

/**
 * The pushed-down SELECT, with identifiers escaped and every value a
 * literal, and how COPY's text of each of its columns becomes JSON: types
 * the gateway does not render are selected as `to_json(col)` (copy.ts).
 */
function selectStatement<C>(
  target: PgTarget,
  request: Pick<ReadRequest, 'columns' | 'filters' | 'offset' | 'limit' | 'range'>,
  table: readonly PgColumn[],
  convert: (column: PgColumn) => C & { json: boolean; asText?: boolean },
): { text: string; columns: C[] } {
  const byName = new Map(table.map((c) => [c.name, c]));
  // Distinct names: a row object holds each column once.
  const chosen =
    request.columns === null ? table : [...new Set(request.columns)].map((name) => byName.get(name) as PgColumn);
  const columns = chosen.map(convert);
  const list = chosen.map((c, i) => {
    const name = escapeIdentifier(c.name);
    return columns[i]?.json ? `to_json(${name})` : columns[i]?.asText ? `${name}::text` : name;
  });
  let text = `SELECT ${list.join(', ')} FROM ${relationName(target)}`;
  const where = whereClause(PG_DIALECT, request.filters);
  text += request.range ? `${where}${where ? ' AND' : ' WHERE'} ${pageRange(request.range)}` : where;
  if (request.limit !== null) text += ` LIMIT ${count(request.limit, 'limit')}`;
  if (request.offset > 0) text += ` OFFSET ${count(request.offset, 'offset')}`;
  return { text, columns };
}

/**
 * How COPY text of a column becomes JSON: a type the gateway does not render is selected as `to_json(col)`
 * (copy.ts).
 */
function jsonCopyColumn(column: PgColumn): CopyColumn & { json: boolean } {
  const kind = copyKind(column.type, column.domain);
  return { name: column.name, kind: kind ?? 'json', json: kind === null };
}

async function connect({ target, ssl, credentials, tag }: PgEndpoint): Promise<pg.Client> {
  // Every TLS setting explicit: PGSSLMODE / PGSSLNEGOTIATION in the gateway's environment must not change a dataset's
  // connection.
  const connection = {
    ...target.connection,
    ssl,
    sslnegotiation: 'postgres' as const,
    ...credentials,
    application_name: tag.slice(0, 63),
    connectionTimeoutMillis: 10_000,
  };
  const client = new Client(connection);
  client.on('error', () => {}); // a dropped connection surfaces on the pending query
  try {
    await client.connect();
  } catch (error) {
    throw classify(error);
  }
  return client;
}

/**
 * Ends a read that did not finish. Closing the socket is not enough: a
 * backend notices a gone client only when it next writes, and a selective
 * query over a large table (or a slow view) may run long before that. A
 * CancelRequest — its own short connection carrying only the backend's
 * process id and secret key (PostgreSQL protocol, "Canceling Requests in
 * Progress") — stops the statement at once. It is sent while a statement
 * is running (`running`, tracked by the read itself: pg's own record of its
 * active query is deprecated), without TLS, as libpq's PQcancel does (the
 * server takes it before any pg_hba rule).
 */
type CancelConnection = pg.Connection & {
  connect(portOrSocket: number | string, host?: string): void;
  cancel(processID: number, secretKey: number): void;
};

function abandon(client: pg.Client, target: PgTarget, running: boolean): void {
  if (running) {
    // pg's typings leave out the BackendKeyData fields and the connection's connect/cancel that pg uses for this.
    const { processID, secretKey } = client as unknown as { processID: number; secretKey: number };
    const canceller = new pg.Connection() as CancelConnection;
    canceller.on('error', () => {}); // best effort: the read's socket is closed below anyway
    canceller.once('connect', () => {
      canceller.cancel(processID, secretKey);
      canceller.stream.end(); // the server closes a cancel connection after reading the request
    });
    const { host, port } = target.connection;
    if (host.startsWith('/')) canceller.connect(`${host}/.s.PGSQL.${port}`);
    else canceller.connect(port, host);
  }
  client.connection.stream.destroy();
}

/** How a read's COPY is sent (PostgreSQL manual, COPY "File Formats") and turned into batches. */
interface CopyFormat<T, C> {
  /** `text` for the JSON transports (copy.ts), `binary` for Arrow (arrow.ts). */
  readonly format: 'text' | 'binary';
  readonly convert: (column: PgColumn) => C & { json: boolean; asText?: boolean };
  readonly converter: (columns: C[]) => CopyReader<T>;
  /** An item sent before the batches (the Arrow schema). */
  readonly first?: (reader: CopyReader<T>) => T;
}

/**
 * Batches from `COPY (SELECT …) TO STDOUT` in one read-only
 * transaction, which also reads the columns the COPY text is converted by
 * (with the relation locked, so they cannot change before it). The socket
 * is read only as fast as batches are taken (copy-out.ts pauses it while
 * converted batches wait).
 */
async function* copyRows<T, C>(
  client: pg.Client,
  target: PgTarget,
  request: ReadRequest,
  { format, convert, converter, first }: CopyFormat<T, C>,
): AsyncGenerator<T> {
  // A fixed scan start keeps chunk boundaries stable for gRPC resume from a sequence number;
  // UTC makes timestamptz text (COPY's and to_json's) the same whatever the server's TimeZone.
  await client.query(
    "BEGIN READ ONLY; SET LOCAL synchronize_seqscans = off; SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO'",
  );
  const table = await lockedColumns(client, target);
  const select = selectStatement(target, checkColumns(table, request), table, convert);
  const reader = converter(select.columns);
  if (first) yield first(reader);
  const copy = new CopyOut(`COPY (${select.text}) TO STDOUT (FORMAT ${format})`, reader);
  client.query(copy);
  yield* copy.batches(request.signal);
}

/**
 * Runs one COPY read on its own connection: cancelled on the server when the
 * request's signal aborts or the consumer leaves early (abandon), the
 * connection ended when the read completes.
 */
async function* copyRead<T>(
  endpoint: PgEndpoint,
  request: ReadRequest,
  read: (client: pg.Client) => AsyncGenerator<T>,
): AsyncGenerator<T> {
  const client = await connect(endpoint);
  // From BEGIN to the end of the COPY a statement of this read is in flight on the connection
  // (a cancel between two of them finds the backend idle, and the server ignores it).
  let running = false;
  // Mid-COPY the server is sending, not reading a Terminate: cancel the statement and close the socket.
  const stop = () => abandon(client, endpoint.target, running);
  request.signal.addEventListener('abort', stop, { once: true });
  let complete = false;
  try {
    request.signal.throwIfAborted(); // aborted while connecting: 'abort' will not fire again
    running = true;
    yield* read(client);
    running = false;
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

/** A converted batch back to objects; a parse failure never carries row text into an error or a log. */
function parseRows(json: Buffer): Row[] {
  try {
    return parseExact(json.toString()) as Row[];
  } catch {
    throw RetrievalErrors.make.source_unavailable({
      problem: 'a row could not be converted (did the table change during the read?)',
    });
  }
}

/** The reads of one dataset's table (postgres.ts validates the dataset and loads this module on its first read). */
export function postgresReads(endpoint: PgEndpoint): Required<Source> {
  const { target } = endpoint;
  const readJson = (request: ReadRequest) =>
    copyRead(endpoint, request, (client) =>
      copyRows(client, target, request, {
        format: 'text',
        convert: jsonCopyColumn,
        converter: (columns) => new CopyJsonConverter(columns, request.batchSize),
      }),
    );
  return {
    async schema() {
      const client = await connect(endpoint);
      try {
        // The read's lookup: the same columns, and the same refusal for a role that may not read them.
        await client.query('BEGIN READ ONLY');
        return (await lockedColumns(client, target)).map(({ name, type }) => ({ name, type }));
      } catch (error) {
        throw classify(error);
      } finally {
        await client.end().catch(() => {});
      }
    },
    readJson,
    async ranges(request, limits) {
      const client = await connect(endpoint);
      try {
        // The read's own checks first: a role that may not read the table, or a column it lacks, is refused here.
        await client.query('BEGIN READ ONLY');
        checkColumns(await lockedColumns(client, target), { ...request, gateColumns: [] });
        const found = await client.query<{ pages: string | null }>(PAGES_SQL, [target.schema, target.table]);
        const pages = found.rows[0]?.pages;
        return pages == null ? [] : pageRanges(Number(pages), limits);
      } catch (error) {
        throw classify(error);
      } finally {
        await client.end().catch(() => {});
      }
    },
    // The schema message first (typed by the locked columns), then record batches.
    async *readArrow(request) {
      const { arrowCopyColumn, CopyArrowConverter } = await pgArrow();
      yield* copyRead(endpoint, request, (client) =>
        copyRows(client, target, request, {
          format: 'binary',
          convert: arrowCopyColumn,
          converter: (columns) => new CopyArrowConverter(columns, request.batchSize),
          first: (reader) => (reader as InstanceType<typeof CopyArrowConverter>).schemaMessage(),
        }),
      );
    },
    // One path for both: gated reads see exactly the values ungated streams send.
    async *read(request) {
      for await (const batch of readJson(request)) yield parseRows(batch.json);
    },
  };
}
