/**
 * The worker thread behind PgSyncConnection: one PostgreSQL connection (node-postgres) that answers one request at a
 * time. The caller's thread posts a request on the port, then blocks in Atomics.wait on the shared flag; this thread
 * runs the query, posts the answer and raises the flag, and the caller reads the answer with receiveMessageOnPort —
 * the pattern of the synckit package (https://github.com/un-ts/synckit), kept here at the size this needs.
 *
 * Built by esbuild into one self-contained script (gateway/db/postgres/bridge-source.ts) and started from that text,
 * so the same code runs from a checkout, the bundle and the single executable.
 */
import { type MessagePort, workerData } from 'node:worker_threads';
import pg from 'pg';
import type { BridgeAnswer, BridgeRequest, BridgeStart } from './bridge-protocol.ts';

/** A connection attempt's bound (the caller blocks meanwhile; each statement brings its own). */
const CONNECT_WITHIN_MS = 5_000;
/** node-postgres's error for a statement past its query_timeout. */
const QUERY_TIMEOUT = 'Query read timeout';
const BYTEA = 17;
const INT8 = 20;
const NUMERIC = 1700;

// SQLite hands integers and counts back as numbers; so must this engine (values past 2^53 are not stored).
pg.types.setTypeParser(INT8, (text) => Number(text));
pg.types.setTypeParser(NUMERIC, (text) => Number(text));

const { url, port, flag, ssl } = workerData as BridgeStart & { port: MessagePort };
const signal = new Int32Array(flag);
/**
 * The connection; replaced by a new one on the next request after it broke (the server restarted, a failover), so a
 * node recovers when PostgreSQL does. A transaction open when it broke is gone with it: its caller got the error.
 */
/** Gives up the current connection: a statement timed out (its answer may still come, to nobody), or it broke. */
let abandon = () => {};
let client = connect();
let broken = false;
/**
 * The connection broke inside a transaction, which PostgreSQL rolled back with it. Until the caller ends that
 * transaction (its ROLLBACK), every statement fails: run on a new connection it would commit on its own, and the
 * transaction's caller would see half of its writes land.
 */
let lostTransaction = false;
/** The caller's end of a transaction (a savepoint's rollback is still inside it). */
const ROLLBACK = /^\s*ROLLBACK(?!\s+TO)\b/i;

function connect(): pg.Client {
  const fresh = new pg.Client({
    connectionString: url,
    ssl,
    application_name: 'meshgate',
    // The caller's thread waits for each answer: a database that stops answering must fail the call, not hang it.
    connectionTimeoutMillis: CONNECT_WITHIN_MS,
    keepAlive: true,
  });
  const lost = () => {
    if (fresh !== client || broken) return;
    broken = true;
    // The status of the last ReadyForQuery: T (in a transaction) or E (in a failed one).
    lostTransaction = ['T', 'E'].includes(fresh.getTransactionStatus() ?? '');
  };
  fresh.on('error', lost);
  fresh.on('end', lost);
  abandon = () => {
    lost();
    void fresh.end().catch(() => undefined);
  };
  return fresh;
}

async function usable(sql: string): Promise<pg.Client> {
  if (lostTransaction) {
    if (!ROLLBACK.test(sql)) {
      throw Object.assign(new Error('the connection to PostgreSQL was lost inside a transaction; it was rolled back'), {
        code: '08006',
      });
    }
    lostTransaction = false;
  }
  if (broken) {
    broken = false;
    client = connect();
    await client.connect();
  }
  return client;
}

function answer(message: BridgeAnswer): void {
  port.postMessage(message);
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
}

/** Buffers cross the thread boundary as Uint8Array; node-postgres sends a Buffer as bytea. */
function params(values: unknown[]): unknown[] {
  return values.map((value) => (value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value) : value));
}

async function run(request: BridgeRequest): Promise<BridgeAnswer> {
  if (request.kind === 'end') {
    client.removeAllListeners('end');
    await client.end();
    return { id: request.id, rows: [], rowCount: 0, bytea: [] };
  }
  const result = await (await usable(request.sql))
    .query({
      text: request.sql,
      values: params(request.params),
      rowMode: request.arrays ? 'array' : undefined,
      query_timeout: request.timeoutMs,
    } as pg.QueryConfig)
    .catch((error: Error & { severity?: string }) => {
      if (error.message === QUERY_TIMEOUT) {
        abandon();
        throw Object.assign(error, { code: '57014' }); // query_canceled
      }
      // The connection itself failed (the server ended the session: FATAL; or the socket broke: no severity at
      // all): the next call starts a new one at once, whether or not the client's own 'error' event came first.
      if (error.severity === undefined || error.severity === 'FATAL') abandon();
      throw error;
    });
  // A multi-statement text (exec) answers one result per statement: the last one is the caller's.
  const last = Array.isArray(result) ? (result.at(-1) as pg.QueryResult) : result;
  const bytea = (last.fields ?? []).flatMap((field, at) =>
    field.dataTypeID === BYTEA ? [request.arrays ? at : field.name] : [],
  );
  return { id: request.id, rows: last.rows ?? [], rowCount: last.rowCount ?? 0, bytea };
}

port.on('message', (request: BridgeRequest) => {
  run(request).then(answer, (error: Error & { code?: string }) =>
    answer({ id: request.id, error: { message: error.message, code: error.code ?? 'PG_ERROR' } }),
  );
});

client.connect().then(
  () => answer({ id: 0, rows: [], rowCount: 0, bytea: [] }),
  (error: Error & { code?: string }) =>
    answer({ id: 0, error: { message: error.message, code: error.code ?? 'PG_CONNECT' } }),
);
