/**
 * The statement API every store writes against: better-sqlite3's own (https://github.com/WiseLibs/better-sqlite3/
 * blob/master/docs/api.md), which the SQLite engine is and the PostgreSQL engine (postgres/sync-connection.ts)
 * implements. Synchronous by design: see postgres/sync-connection.ts for why that holds on PostgreSQL too.
 */
export interface SqlStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  raw(toggle?: boolean): this;
  pluck(toggle?: boolean): this;
}

export interface SqlConnection {
  prepare(sql: string): SqlStatement;
  exec(sql: string): unknown;
  /** fn inside BEGIN … COMMIT (ROLLBACK when it throws); nested calls are savepoints. */
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  readonly inTransaction: boolean;
  readonly open: boolean;
  close(): void;
}

/** Which engine holds the state: SQLite in the data dir (one node), or PostgreSQL shared by several nodes. */
export type DatabaseEngine = 'sqlite' | 'postgres';
