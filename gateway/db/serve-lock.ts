/**
 * The serve lock on `<dataDir>/serve.lock`: every process serving the data
 * dir (a gateway, each of its workers, another node on a shared database)
 * holds a SHARED lock for its whole life, and a restore takes the EXCLUSIVE
 * lock, which it gets only while nothing serves — and which keeps any gateway
 * from starting while it works. The lock is SQLite's own POSIX advisory lock on
 * an empty database file (https://www.sqlite.org/lockingv3.html): a read
 * transaction left open holds SHARED, `BEGIN EXCLUSIVE` in exclusive locking
 * mode holds EXCLUSIVE. The kernel drops it when the process ends, however it
 * ends, so a crash leaves no stale lock to clean up (unlike a pid file), and
 * SQLite also sees a holder in the same process, which in-process test
 * gateways need.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteConnection } from './open.ts';

export const SERVE_LOCK_FILE = 'serve.lock';

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    holder: 'serving' | 'restoring',
  ) {
    const what = holder === 'serving' ? 'another meshgate is serving' : 'a restore is writing';
    super(`${what} ${dataDir} (it holds ${join(dataDir, SERVE_LOCK_FILE)})`);
  }
}

export interface ServeLock {
  release(): void;
}

/** A serving process's lock, shared with the others; throws DataDirInUseError while a restore holds the dir. */
export function holdServeLock(dataDir: string): ServeLock {
  return takeLock(dataDir, 'shared');
}

/** The restore's lock, taken without waiting; throws DataDirInUseError while anything serves the dir. */
export function holdRestoreLock(dataDir: string): ServeLock {
  return takeLock(dataDir, 'exclusive');
}

function takeLock(dataDir: string, mode: 'shared' | 'exclusive'): ServeLock {
  const file = join(dataDir, SERVE_LOCK_FILE);
  createPrivateFile(file);
  const lock = sqliteConnection(file, { timeout: 0 });
  try {
    // The journal in memory: the transaction never writes, and a -journal file would only clutter the data dir.
    lock.pragma('journal_mode = MEMORY');
    if (mode === 'exclusive') {
      lock.pragma('locking_mode = EXCLUSIVE');
      lock.exec('BEGIN EXCLUSIVE');
    } else {
      lock.exec('BEGIN');
      lock.prepare('SELECT count(*) FROM sqlite_master').get();
    }
  } catch (error) {
    lock.close();
    const busy = (error as { code?: string }).code === 'SQLITE_BUSY';
    if (busy) throw new DataDirInUseError(dataDir, mode === 'shared' ? 'restoring' : 'serving');
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
    holdRestoreLock(dataDir).release();
    return false;
  } catch (error) {
    if (error instanceof DataDirInUseError) return true;
    throw error;
  }
}
