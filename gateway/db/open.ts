/**
 * One SQLite database per gateway: WAL, foreign keys, full
 * sync so a committed change survives a crash before the response leaves.
 * Drizzle migrations from data/migrations run before the listener opens.
 */
import { closeSync, openSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { type BetterSQLite3Database, drizzle, migrate } from './drizzle.ts';

export type Db = BetterSQLite3Database;

const MEMORY = ':memory:';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../data/migrations', import.meta.url));

export function openDatabase(file: string): { sqlite: Database.Database; db: Db } {
  // Created 0600 before SQLite opens it: its WAL and SHM files take the database file's mode.
  // ':memory:' names no file (https://www.sqlite.org/inmemorydb.html).
  if (file !== MEMORY) closeSync(openSync(file, 'a', 0o600));
  const sqlite = new Database(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = drizzle(sqlite);
  migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
  return { sqlite, db };
}
