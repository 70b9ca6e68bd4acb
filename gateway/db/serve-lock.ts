/**
 * The serve lock: a serving gateway holds an exclusive lock on
 * `<dataDir>/serve.lock` for its whole life, so a restore (or a second
 * `serve`) can tell that the data dir is in use. The lock is SQLite's own
 * POSIX advisory lock on an empty database file (locking_mode EXCLUSIVE,
 * https://www.sqlite.org/pragma.html#pragma_locking_mode): the kernel drops
 * it when the process ends, however it ends, so a crash leaves no stale lock
 * to clean up (unlike a pid file), and SQLite also sees a holder in the same
 * process, which in-process test gateways need.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export const SERVE_LOCK_FILE = 'serve.lock';

export class DataDirInUseError extends Error {
  constructor(readonly dataDir: string) {
    super(`another meshgate is serving ${dataDir} (it holds ${join(dataDir, SERVE_LOCK_FILE)})`);
  }
}

export interface ServeLock {
  release(): void;
}

/** Takes the lock without waiting; throws DataDirInUseError when a gateway already holds it. */
export function holdServeLock(dataDir: string): ServeLock {
  const file = join(dataDir, SERVE_LOCK_FILE);
  createPrivateFile(file);
  const lock = new Database(file, { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    // The journal in memory: the transaction never writes, and a -journal file would only clutter the data dir.
    lock.pragma('journal_mode = MEMORY');
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') throw new DataDirInUseError(dataDir);
    throw error;
  }
  return { release: () => lock.close() };
}

/**
 * Creates the empty lock file 0600 unless it exists. Never opens an existing one: closing any descriptor of a file
 * drops every POSIX lock this process holds on it (fcntl(2)), which would free an in-process gateway's lock.
 */
function createPrivateFile(file: string): void {
  try {
    writeFileSync(file, '', { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Whether a gateway is serving `dataDir` right now (a data dir never served has no lock file). */
export function isServing(dataDir: string): boolean {
  // A gateway serving the dir holds the file open; probing must not create it in a dir that was never served.
  if (!existsSync(join(dataDir, SERVE_LOCK_FILE))) return false;
  try {
    holdServeLock(dataDir).release();
    return false;
  } catch (error) {
    if (error instanceof DataDirInUseError) return true;
    throw error;
  }
}
