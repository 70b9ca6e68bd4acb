/**
 * `meshgate backup`: a consistent copy of a data dir, taken while the
 * gateway serves. The database is copied with SQLite's online backup API
 * (https://www.sqlite.org/backup.html) in a single step: one read
 * transaction, so the copy is the database as of that instant — every write
 * committed before it, none after — and a WAL reader never blocks the
 * gateway's writers. Copying in small steps instead would restart from the
 * first page each time the gateway writes, and never finish under load.
 * The key-encryption keys are left out by design (the database holds
 * secrets wrapped by them; a backup that held both would be the secrets in
 * clear); the manifest names the KEK files a restore will need.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { kekDirOf } from '../../domains/catalog/index.ts';
import type { Config } from '../../gateway/config/schema.ts';
import { sqliteConnection } from '../../gateway/db/open.ts';
import { DATABASE_FILE } from '../../gateway/db/storage.ts';
import {
  type FileEntry,
  hashFile,
  isInside,
  isPlainRelativePath,
  LEFT_OUT_OF_BACKUPS,
  MANIFEST_FILE,
  type Manifest,
  newManifest,
  syncDir,
  writeSynced,
} from './archive.ts';
import { inspectDatabase } from './database.ts';

/** Pages per backup step: all of them at once (sqlite3_backup_step takes an int). */
const ALL_PAGES = 0x7fffffff;

export interface BackupResult {
  readonly manifest: Manifest;
  /** Entries skipped because they are neither a file nor a folder (a symlink, a socket). */
  readonly skipped: readonly string[];
}

export async function createBackup(config: Readonly<Config>, target: string): Promise<BackupResult> {
  const dataDir = resolve(config.dataDir);
  const destination = resolve(target);
  if (!existsSync(join(dataDir, DATABASE_FILE))) {
    throw new Error(`no meshgate database in ${dataDir}: nothing to back up`);
  }
  if (existsSync(destination)) throw new Error(`${destination} already exists: a backup never overwrites one`);
  if (isInside(destination, dataDir)) {
    throw new Error(`${destination} is inside the data dir ${dataDir}: back up to another folder`);
  }
  if (!existsSync(dirname(destination))) throw new Error(`${dirname(destination)} does not exist`);
  // Built under a temporary name and renamed when complete: a folder with the target's name is always a whole backup.
  const staging = mkdtempSync(`${destination}.partial-`);
  try {
    const result = await fill(config, dataDir, staging);
    renameSync(staging, destination);
    syncDir(dirname(destination));
    return result;
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

async function fill(config: Readonly<Config>, dataDir: string, staging: string): Promise<BackupResult> {
  const kekDir = resolve(kekDirOf(config));
  const databaseCopy = join(staging, DATABASE_FILE);
  // Created 0600 first: the backup API would create it with the umask's mode.
  writeSynced(databaseCopy, '');
  const source = sqliteConnection(join(dataDir, DATABASE_FILE), { fileMustExist: true, timeout: 5000 });
  try {
    await source.backup(databaseCopy, { progress: () => ALL_PAGES });
  } finally {
    source.close();
  }
  const facts = inspectDatabase(databaseCopy, kekDir, 'standalone');
  const files: FileEntry[] = [{ path: DATABASE_FILE, ...hashFile(databaseCopy) }];
  const skipped: string[] = [];
  for (const path of dataFiles(dataDir, '', kekDir, skipped)) {
    mkdirSync(dirname(join(staging, path)), { recursive: true, mode: 0o700 });
    files.push({ path, ...hashFile(join(dataDir, path), join(staging, path)) });
  }
  const manifest = newManifest({
    createdAt: new Date().toISOString(),
    schema: { applied: facts.applied, latest: facts.latest },
    kek: { dir: kekDir, files: facts.kek.map((k) => k.file) },
    files,
  });
  writeSynced(join(staging, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  syncDir(staging);
  return { manifest, skipped };
}

/**
 * The data dir's regular files to copy, relative: everything but LEFT_OUT at the top, the KEK folder wherever it
 * is, and hidden names (the temporary files of atomic writes in progress).
 */
function dataFiles(dataDir: string, prefix: string, kekDir: string, skipped: string[]): string[] {
  return readdirSync(join(dataDir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    const absolute = join(dataDir, path);
    const leftOut = !prefix && LEFT_OUT_OF_BACKUPS.has(entry.name);
    if (leftOut || absolute === kekDir || !isPlainRelativePath(path)) return [];
    if (entry.isDirectory()) return dataFiles(dataDir, path, kekDir, skipped);
    if (entry.isFile()) return [path];
    skipped.push(absolute);
    return [];
  });
}
