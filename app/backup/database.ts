/**
 * What a backup or a restore reads from a copied database, without running
 * a migration or any domain: its schema level, its integrity, and the KEK
 * files its secrets need.
 */

import { checkKekFiles, type KekFileStatus } from '../../domains/catalog/index.ts';
import { drizzle } from '../../gateway/db/drizzle.ts';
import { sqliteConnection } from '../../gateway/db/open.ts';

const SCHEMA_LEVEL = 'SELECT count(*) AS applied, max(created_at) AS latest FROM __drizzle_migrations';

export interface DatabaseFacts {
  /** Applied migrations and the newest one's `created_at` (the drizzle journal's `when`). */
  readonly applied: number;
  readonly latest: number;
  readonly kek: readonly KekFileStatus[];
}

/**
 * mode `standalone` (a fresh backup copy): switched to the rollback journal, so the copy is one file and no -wal
 * or -shm appears beside it. mode `verify` (a restored copy): opened read-only and integrity-checked.
 */
export function inspectDatabase(file: string, kekDir: string, mode: 'standalone' | 'verify'): DatabaseFacts {
  const sqlite = sqliteConnection(file, { fileMustExist: true, readonly: mode === 'verify' });
  try {
    if (mode === 'standalone') sqlite.pragma('journal_mode = DELETE');
    else {
      // https://www.sqlite.org/pragma.html#pragma_integrity_check: one row 'ok', or up to 100 problems.
      const rows = sqlite.pragma('integrity_check') as { integrity_check: string }[];
      const problems = rows.map((r) => r.integrity_check);
      if (problems.join() !== 'ok') {
        throw new Error(`the database fails SQLite's integrity check: ${problems.slice(0, 3).join('; ')}`);
      }
    }
    const schema = sqlite.prepare(SCHEMA_LEVEL).get() as { applied: number; latest: number | null };
    if (schema.applied < 1 || schema.latest === null) throw new Error('the database has no applied migration');
    return { applied: schema.applied, latest: Number(schema.latest), kek: checkKekFiles(drizzle(sqlite), kekDir) };
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith('SQLITE_')) {
      throw new Error(`${file} is not a readable meshgate database`, { cause: error });
    }
    throw error;
  } finally {
    sqlite.close();
  }
}
