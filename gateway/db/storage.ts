/**
 * What the gateway keeps on disk is readable by its own user only: the
 * data dir and key folders 0700, the database (with its WAL and SHM) and
 * every key file 0600 — the database holds password hashes and wrapped
 * secrets, the key folders the signing, TLS and key-encryption keys.
 * New files are created so; folders and files left looser by an earlier
 * version, a restore or an operator's umask are tightened at start, and
 * each change is logged (the way sshd's StrictModes and PostgreSQL refuse
 * or fix a group/world-readable data directory).
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';

const PRIVATE_DIR = 0o700;
const PRIVATE_FILE = 0o600;

export const DATABASE_FILE = 'meshgate.db';

/** SQLite's side files: created beside the database with the database file's own mode (unix VFS). */
const DATABASE_FILES = [DATABASE_FILE, `${DATABASE_FILE}-wal`, `${DATABASE_FILE}-shm`, `${DATABASE_FILE}-journal`];

/** Folders under the data dir whose every file is a key or certificate material. */
const KEY_DIRS = ['keys', 'tls'];

/** Creates the data dir private, then tightens what is already there; extraKeyDirs are key folders kept elsewhere. */
export function secureDataDir(dataDir: string, logger: Logger, extraKeyDirs: readonly string[] = []): void {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR });
  tighten(dataDir, PRIVATE_DIR, logger);
  for (const name of DATABASE_FILES) tighten(join(dataDir, name), PRIVATE_FILE, logger);
  for (const dir of [...KEY_DIRS.map((name) => join(dataDir, name)), ...extraKeyDirs]) tightenTree(dir, logger);
}

function tightenTree(dir: string, logger: Logger): void {
  if (!existsSync(dir)) return;
  tighten(dir, PRIVATE_DIR, logger);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) tightenTree(path, logger);
    else if (entry.isFile()) tighten(path, PRIVATE_FILE, logger);
  }
}

/** Removes group/other bits beyond `mode`; never widens what the operator made tighter. */
function tighten(path: string, mode: number, logger: Logger): void {
  if (!existsSync(path)) return;
  const current = statSync(path).mode & 0o777;
  if ((current & ~mode) === 0) return;
  const next = current & mode;
  chmodSync(path, next);
  logger.warn({ path, from: octal(current), to: octal(next) }, 'storage permissions tightened');
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}
