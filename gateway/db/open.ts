/**
 * The gateway's database: SQLite in the data dir (the embedded default: WAL, foreign keys, full sync so a committed
 * change survives a crash before the response leaves), or PostgreSQL when `database` names one, shared by every
 * node of a cluster. Drizzle migrations run before the listener opens; the addon and the migrations come from
 * gateway/shipped.ts, which finds them in the checkout or inside the single executable.
 */
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { shippedFiles } from '../shipped.ts';
import type { DatabaseEngine, SqlConnection } from './connection.ts';
import { type BetterSQLite3Database, drizzle, migrate } from './drizzle.ts';
import { DATABASE_FILE } from './storage.ts';

export type Db = BetterSQLite3Database;

export interface OpenedDatabase {
  readonly engine: DatabaseEngine;
  /** The statement API the raw-SQL stores and the change feed use. */
  readonly sql: SqlConnection;
  /** drizzle over the same connection. */
  readonly db: Db;
}

const MEMORY = ':memory:';

/**
 * Every SQLite connection the gateway opens (the database, the serve lock, a backup's copies): with the addon
 * gateway/shipped.ts found, which better-sqlite3's own lookup cannot find from inside a bundle.
 */
export function sqliteConnection(file: string, options: Database.Options = {}): Database.Database {
  // better-sqlite3 takes a loaded addon object as well as a path; its type declarations know only the path.
  return new Database(file, { ...options, nativeBinding: shippedFiles().sqliteAddon as unknown as string });
}

/** The configured engine, migrated to this build's schema. */
export async function openConfiguredDatabase(config: {
  readonly dataDir: string;
  readonly database: string | null;
}): Promise<OpenedDatabase> {
  if (config.database === null) {
    const { sqlite, db } = openDatabase(join(config.dataDir, DATABASE_FILE));
    return { engine: 'sqlite', sql: sqlite, db };
  }
  // Loaded on this engine only: a SQLite gateway never reads the bridge's code.
  const { openPostgres } = await import('./postgres/open.ts');
  const sql = await openPostgres(config.database, shippedFiles().pgMigrationsFolder);
  // drizzle's SQLite driver calls only the statement API both engines share (connection.ts).
  return { engine: 'postgres', sql, db: drizzle(sql as unknown as Database.Database) };
}

export function openDatabase(file: string): { sqlite: Database.Database; db: Db } {
  // Created 0600 before SQLite opens it: its WAL and SHM files take the database file's mode.
  // ':memory:' names no file (https://www.sqlite.org/inmemorydb.html).
  if (file !== MEMORY) closeSync(openSync(file, 'a', 0o600));
  const sqlite = sqliteConnection(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = drizzle(sqlite);
  migrate(db, { migrationsFolder: shippedFiles().migrationsFolder });
  return { sqlite, db };
}
