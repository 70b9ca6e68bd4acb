/**
 * Opens the PostgreSQL engine: the bridge connection, then the drizzle migrations of data/migrations-pg under a
 * session advisory lock, so nodes starting together against a new database migrate it once, one after another.
 */
import type Database from 'better-sqlite3';
import { drizzle, migrate } from '../drizzle.ts';
import { pgBridgeSource } from './bridge-source.ts';
import { PgSyncConnection } from './sync-connection.ts';

const MIGRATION_LOCK = 'meshgate.migrations';

export async function openPostgres(url: string, migrationsFolder: string): Promise<PgSyncConnection> {
  let connection: PgSyncConnection;
  try {
    connection = new PgSyncConnection(await pgBridgeSource(), url, undefined);
  } catch (error) {
    throw new Error(`PostgreSQL at ${describe(url)} refused the connection: ${(error as Error).message}`);
  }
  try {
    connection.prepare('SELECT pg_advisory_lock(hashtext(?))').get(MIGRATION_LOCK);
    try {
      connection.withLongStatements(() =>
        migrate(drizzle(connection as unknown as Database.Database), { migrationsFolder }),
      );
    } finally {
      connection.prepare('SELECT pg_advisory_unlock(hashtext(?))').get(MIGRATION_LOCK);
    }
    return connection;
  } catch (error) {
    connection.close();
    throw error;
  }
}

/** host:port/database — never the user's password, which a URL may carry. */
export function describe(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return 'the configured URL';
  }
}
