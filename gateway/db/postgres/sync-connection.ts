/**
 * A PostgreSQL connection with the synchronous statement API of better-sqlite3 — prepare(sql).run/get/all/iterate,
 * raw(), pluck(), transaction(fn), exec(sql) — so drizzle's SQLite driver and every store run unchanged on either
 * engine. The stores were written synchronous on purpose: the request hot path reads in-process indexes and caches,
 * and only writes and cold reads reach the store; on PostgreSQL each such call blocks this thread for one round
 * trip, as a SQLite write blocks it for an fsync. The round trip runs on a worker thread (bridge-worker.ts).
 *
 * The SQL the stores and drizzle's SQLite dialect write is the subset both engines share; the differences are
 * bridged in the database, not here: every table carries a `rowid` column (bigserial) where SQLite has its implicit
 * one, and the migrations define `unixepoch()`. Two things are rewritten in the text: `?` placeholders become
 * PostgreSQL's `$n`, and drizzle's SQLite dialect qualifies the columns of an ON CONFLICT target with their table
 * ("t"."c"), which SQLite accepts and PostgreSQL's grammar does not (a conflict target names bare columns).
 */
import type { ConnectionOptions } from 'node:tls';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { BridgeAnswer, BridgeRequest } from './bridge-protocol.ts';

/**
 * How long one statement may take (the worker then fails it and replaces the connection); the caller's thread waits
 * that plus a margin for connecting, so a database that stops answering fails calls instead of freezing the node.
 */
const STATEMENT_WITHIN_MS = 15_000;
/** Migrations may rebuild tables and indexes: their statements get longer. */
const LONG_STATEMENT_WITHIN_MS = 600_000;
const MARGIN_MS = 10_000;
/** Rows per FETCH of iterate()'s cursor. */
const CURSOR_BATCH = 5000;
let cursors = 0;
const CONFLICT_TARGET = /\bon conflict \([^)]*\)/gi;
const QUALIFIED = /"[^"]+"\.("[^"]+")/g;
/** The transaction kinds drizzle asks better-sqlite3 for by name. */
type Behaviour = 'deferred' | 'immediate' | 'exclusive';
const TRANSACTION_CONTROL = /^\s*(BEGIN|START\s+TRANSACTION|COMMIT|END|ROLLBACK(?!\s+TO))\b/i;

export class PgQueryError extends Error {
  constructor(
    message: string,
    /** PostgreSQL's SQLSTATE (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
    readonly code: string,
  ) {
    super(message);
    this.name = 'PgQueryError';
  }
}

interface Result {
  rows: unknown[];
  rowCount: number;
}

export class PgSyncConnection {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #flag: Int32Array;
  readonly #positional = new Map<string, string>();
  #nextId = 1;
  readonly #statementBoundMs: number;
  #statementWithinMs: number;
  #depth = 0;
  #open = true;

  /** Starts the worker and waits for its connection; throws what PostgreSQL answered (bad password, no database). */
  constructor(
    bridgeSource: string,
    url: string,
    ssl: ConnectionOptions | undefined,
    statementWithinMs = STATEMENT_WITHIN_MS,
  ) {
    this.#statementBoundMs = statementWithinMs;
    this.#statementWithinMs = statementWithinMs;
    const flag = new SharedArrayBuffer(4);
    const { port1, port2 } = new MessageChannel();
    this.#flag = new Int32Array(flag);
    this.#port = port1;
    this.#worker = new Worker(bridgeSource, {
      eval: true,
      workerData: { url, flag, ssl, port: port2 },
      transferList: [port2],
    });
    this.#worker.unref();
    try {
      this.#await(0);
    } catch (error) {
      void this.#worker.terminate();
      throw error;
    }
  }

  get open(): boolean {
    return this.#open;
  }

  get inTransaction(): boolean {
    return this.#depth > 0;
  }

  prepare(sql: string): PgStatement {
    return new PgStatement(this, this.#toPositional(sql));
  }

  /** One or more statements without parameters (PostgreSQL's simple query protocol). */
  exec(sql: string): this {
    this.query(sql, [], false);
    return this;
  }

  /** better-sqlite3's transaction(fn): BEGIN … COMMIT, ROLLBACK on a throw, nested calls as savepoints. */
  transaction<A extends unknown[], R>(
    fn: (...args: A) => R,
  ): ((...args: A) => R) & Record<Behaviour, (...args: A) => R> {
    const run = (...args: A): R =>
      this.#depth > 0
        ? this.#inSavepoint(`meshgate_sp_${this.#depth}`, () => fn(...args))
        : this.#inTransaction(() => fn(...args));
    // drizzle calls the behaviour by name (deferred/immediate/exclusive); PostgreSQL takes row locks as it writes.
    return Object.assign(run, { deferred: run, immediate: run, exclusive: run });
  }

  /** The outer call: its BEGIN and COMMIT (or ROLLBACK) move the depth themselves (query()). */
  #inTransaction<R>(fn: () => R): R {
    this.exec('BEGIN');
    try {
      const result = fn();
      this.exec('COMMIT');
      return result;
    } catch (error) {
      this.exec('ROLLBACK');
      throw error;
    }
  }

  /** A nested call: a savepoint, counted in the depth while it is open. */
  #inSavepoint<R>(name: string, fn: () => R): R {
    this.exec(`SAVEPOINT ${name}`);
    this.#depth++;
    try {
      const result = fn();
      this.#depth--;
      this.exec(`RELEASE SAVEPOINT ${name}`);
      return result;
    } catch (error) {
      this.#depth--;
      this.exec(`ROLLBACK TO SAVEPOINT ${name}`);
      throw error;
    }
  }

  pragma(): never {
    throw new Error('PRAGMA is SQLite-only; this gateway runs on PostgreSQL');
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    try {
      this.#call({ kind: 'end', id: this.#nextId++ });
    } finally {
      void this.#worker.terminate();
    }
  }

  query(sql: string, params: unknown[], arrays: boolean): Result {
    if (!this.#open) throw new TypeError('The database connection is not open');
    const timeoutMs = this.#statementWithinMs;
    const result = this.#call({ kind: 'query', id: this.#nextId++, sql, params, arrays, timeoutMs }, timeoutMs);
    const control = TRANSACTION_CONTROL.exec(sql)?.[1]?.toUpperCase();
    if (control === 'BEGIN' || control === 'START') this.#depth = Math.max(this.#depth, 1);
    else if (control) this.#depth = 0;
    return result;
  }

  /** Runs `fn` with the long statement bound (the migrations). */
  withLongStatements<T>(fn: () => T): T {
    this.#statementWithinMs = LONG_STATEMENT_WITHIN_MS;
    try {
      return fn();
    } finally {
      this.#statementWithinMs = this.#statementBoundMs;
    }
  }

  #call(request: BridgeRequest, timeoutMs = STATEMENT_WITHIN_MS): Result {
    Atomics.store(this.#flag, 0, 0);
    this.#port.postMessage(request);
    return this.#await(request.id, timeoutMs + MARGIN_MS);
  }

  /** Blocks until the worker answers request `id`; answers to calls that timed out earlier are dropped. */
  #await(id: number, withinMs = STATEMENT_WITHIN_MS + MARGIN_MS): Result {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const message = receiveMessageOnPort(this.#port)?.message as BridgeAnswer | undefined;
      if (message?.id === id) return settle(message);
      if (message) continue;
      const left = deadline - Date.now();
      if (left <= 0 || Atomics.wait(this.#flag, 0, 0, left) === 'timed-out') {
        throw new PgQueryError(`PostgreSQL did not answer within ${withinMs / 1000} s`, '57014');
      }
      Atomics.store(this.#flag, 0, 0);
    }
  }

  /** `?` placeholders outside quoted strings and identifiers become `$1`, `$2`, …; the result is kept per text. */
  #toPositional(sql: string): string {
    let translated = this.#positional.get(sql);
    if (translated === undefined) {
      translated = toPositional(sql).replace(CONFLICT_TARGET, (target: string) => target.replace(QUALIFIED, '$1'));
      this.#positional.set(sql, translated);
    }
    return translated;
  }
}

export class PgStatement {
  #arrays = false;
  #pluck = false;

  constructor(
    private readonly connection: PgSyncConnection,
    readonly source: string,
  ) {}

  /** better-sqlite3's raw(): rows as arrays of column values. */
  raw(toggle = true): this {
    this.#arrays = toggle;
    return this;
  }

  /** better-sqlite3's pluck(): the first column's value instead of the row. */
  pluck(toggle = true): this {
    this.#pluck = toggle;
    return this;
  }

  run(...params: unknown[]): { changes: number; lastInsertRowid: number } {
    return { changes: this.#query(params).rowCount, lastInsertRowid: 0 };
  }

  get(...params: unknown[]): unknown {
    return this.all(...params)[0];
  }

  all(...params: unknown[]): unknown[] {
    const { rows } = this.#query(params);
    return this.#pluck ? rows.map((row) => (row as unknown[])[0]) : rows;
  }

  /**
   * Rows in batches through a cursor (https://www.postgresql.org/docs/current/sql-declare.html), so a large table
   * (the tuple index at start) is never held whole twice; inside the caller's transaction when there is one.
   */
  *iterate(...params: unknown[]): IterableIterator<unknown> {
    const own = !this.connection.inTransaction;
    const cursor = `meshgate_cursor_${++cursors}`;
    if (own) this.connection.exec('BEGIN');
    try {
      this.connection.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR ${this.source}`, this.#values(params), false);
      for (;;) {
        const { rows } = this.connection.query(`FETCH ${CURSOR_BATCH} FROM ${cursor}`, [], this.#arrays || this.#pluck);
        for (const row of rows) yield this.#pluck ? (row as unknown[])[0] : row;
        if (rows.length < CURSOR_BATCH) break;
      }
      this.connection.query(`CLOSE ${cursor}`, [], false);
    } finally {
      // After a failed FETCH the transaction is aborted, and COMMIT ends it as a rollback.
      if (own) this.connection.exec('COMMIT');
    }
  }

  #query(params: unknown[]): Result {
    return this.connection.query(this.source, this.#values(params), this.#arrays || this.#pluck);
  }

  /** better-sqlite3 takes the values spread or as one array. */
  #values(params: unknown[]): unknown[] {
    const values = params.length === 1 && Array.isArray(params[0]) ? params[0] : params;
    return values.map(toDriverValue);
  }
}

function settle(message: BridgeAnswer): Result {
  if ('error' in message) throw new PgQueryError(message.error.message, message.error.code);
  if (message.bytea.length > 0)
    for (const row of message.rows) restoreBuffers(row as Record<string | number, unknown>, message.bytea);
  return message;
}

/** Structured clone turns a Buffer into a Uint8Array; the stores expect Buffers, as better-sqlite3 returns. */
function restoreBuffers(row: Record<string | number, unknown>, columns: readonly (string | number)[]): void {
  for (const column of columns) {
    const value = row[column];
    if (value instanceof Uint8Array) row[column] = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
}

/** better-sqlite3 binds booleans as 1/0 and bigints as integers; node-postgres would send 'true' and fail on bigint. */
function toDriverValue(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** A quoted string, a quoted identifier, a line comment (each kept whole), or a `?` placeholder. */
const PLACEHOLDER_OR_QUOTED = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\?/g;

/** Rewrites `?` outside '…' strings, "…" identifiers and -- comments to `$n`, as PostgreSQL numbers parameters. */
export function toPositional(sql: string): string {
  let n = 0;
  return sql.replace(PLACEHOLDER_OR_QUOTED, (token) => (token === '?' ? `$${++n}` : token));
}
