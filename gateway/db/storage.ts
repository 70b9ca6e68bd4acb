/**
 * What the gateway keeps on disk is readable by its own user only: the
 * data dir and key folders 0700, the database (with its WAL and SHM) and
 * every key file 0600 — the database holds password hashes and wrapped
 * secrets, the key folders the signing, TLS and key-encryption keys.
 * New files are created so; folders, the database and certificates left
 * looser by an earlier version, a restore or an operator's umask are
 * tightened at start, and each change is logged (PostgreSQL refuses a
 * group/world-readable data directory; here it is fixed and said).
 * A secret key file found readable by others is different: it may already
 * have been read, so start stops and names it (as sshd refuses an
 * "UNPROTECTED PRIVATE KEY FILE") — rotating it is the operator's call.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';

const PRIVATE_DIR = 0o700;
const PRIVATE_FILE = 0o600;

export const DATABASE_FILE = 'meshgate.db';

/** SQLite's side files: created beside the database with the database file's own mode (unix VFS). */
export const DATABASE_FILES = [
  DATABASE_FILE,
  `${DATABASE_FILE}-wal`,
  `${DATABASE_FILE}-shm`,
  `${DATABASE_FILE}-journal`,
];

/** The folder of secret keys (signing key, PSK vault key, KEKs by default) under the data dir. */
const KEYS_DIR = 'keys';
/** The platform CA and server certificate: tightened like the database. */
const TLS_DIR = 'tls';

/**
 * Creates the data dir private, then tightens what is already there; extraKeyDirs are key folders kept
 * elsewhere. Throws, naming every file, when a secret key file is readable by others.
 */
export function secureDataDir(dataDir: string, logger: Logger, extraKeyDirs: readonly string[] = []): void {
  makePrivateDir(dataDir);
  tighten(dataDir, PRIVATE_DIR, logger);
  for (const name of DATABASE_FILES) tighten(join(dataDir, name), PRIVATE_FILE, logger);
  walk(join(dataDir, TLS_DIR), logger, (file) => tighten(file, PRIVATE_FILE, logger));
  const exposed: string[] = [];
  for (const dir of [join(dataDir, KEYS_DIR), ...extraKeyDirs]) {
    walk(dir, logger, (file) => {
      const mode = statSync(file).mode & 0o777;
      if ((mode & ~PRIVATE_FILE) !== 0) exposed.push(`${file} (mode ${octal(mode)})`);
    });
  }
  if (exposed.length > 0) {
    throw new Error(
      `key files readable by other users: ${exposed.join(', ')}; a key file must be mode 0600. ` +
        'It may have been read: rotate it, or chmod 600 it if it was never exposed.',
    );
  }
}

/**
 * Creates the folder and the missing ones above it (0700), one level at a time from the nearest that exists. Node's
 * recursive mkdirSync never returns on a path the kernel answers ENOENT for though its parent exists (under /proc or
 * /sys), spinning on one core past SIGTERM; one level at a time, such a path is one clear error.
 */
export function makePrivateDir(path: string): void {
  const missing: string[] = [];
  for (let at = resolve(path); !existsSync(at); at = dirname(at)) missing.unshift(at);
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode: PRIVATE_DIR });
    } catch (error) {
      const { code } = error as NodeJS.ErrnoException;
      if (code === 'EEXIST') continue; // made meanwhile by another process
      throw new Error(`cannot create the folder ${dir}: ${code ?? (error as Error).message}`, { cause: error });
    }
  }
  if (!statSync(path).isDirectory()) throw new Error(`${path} is not a folder`);
}

/** Tightens every folder of the tree and hands each regular file to `onFile`. */
function walk(dir: string, logger: Logger, onFile: (file: string) => void): void {
  if (!existsSync(dir)) return;
  tighten(dir, PRIVATE_DIR, logger);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, logger, onFile);
    else if (entry.isFile()) onFile(path);
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
