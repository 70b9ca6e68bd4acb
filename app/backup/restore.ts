/**
 * `meshgate restore`: a backup (app/backup/archive.ts) back into a data dir.
 * Nothing in the data dir changes until the whole backup has been copied
 * into a staging folder inside it and verified there: every file against its
 * manifest digest (the bytes written, not a second read), the set of files
 * against the manifest (nothing missing, nothing extra, no link), the
 * database against SQLite's integrity check and this build's schema. Only
 * then are the staged files renamed into place. The serve lock is held
 * throughout, so a gateway cannot start on a half-restored dir, and a
 * running one makes the restore refuse. The KEK folder is never written: the
 * restore reports which KEK files the restored secrets need and whether the
 * folder holds them.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type KekFileStatus, kekDirOf } from '../../domains/catalog/index.ts';
import type { Config } from '../../gateway/config/schema.ts';
import { holdRestoreLock, SERVE_LOCK_FILE } from '../../gateway/db/serve-lock.ts';
import { DATABASE_FILE, makePrivateDir } from '../../gateway/db/storage.ts';
import {
  hashFile,
  isInside,
  LEFT_OUT_OF_BACKUPS,
  latestKnownMigration,
  listPlainFiles,
  MANIFEST_FILE,
  type Manifest,
  readManifest,
  syncDir,
} from './archive.ts';
import { inspectDatabase } from './database.ts';

/** The staging folder's name: hidden, so no manifest path can name it. */
const STAGING_PREFIX = '.restoring-';

export interface RestoreResult {
  readonly manifest: Manifest;
  readonly kekDir: string;
  readonly kek: readonly KekFileStatus[];
}

export function restoreBackup(config: Readonly<Config>, source: string, options: { force: boolean }): RestoreResult {
  const dataDir = resolve(config.dataDir);
  const from = resolve(source);
  const kekDir = resolve(kekDirOf(config));
  if (isInside(from, dataDir) || isInside(dataDir, from)) {
    throw new Error(`the backup ${from} and the data dir ${dataDir} overlap`);
  }
  makePrivateDir(dataDir);
  const lock = holdRestoreLock(dataDir);
  try {
    const manifest = verifiedManifest(from, dataDir, kekDir);
    const present = contentOf(dataDir, kekDir);
    if (present.length > 0 && !options.force) {
      const shown = present.slice(0, 3).join(', ') + (present.length > 3 ? ', …' : '');
      const remedy = 'restore into an empty data dir, or pass --force to replace its content';
      throw new Error(`${dataDir} is not empty (${shown}): ${remedy}`);
    }
    const staging = mkdtempSync(join(dataDir, STAGING_PREFIX));
    try {
      const kek = stage(from, manifest, staging, kekDir);
      if (options.force) clearExcept(dataDir, [kekDir, staging, join(dataDir, SERVE_LOCK_FILE)]);
      moveIntoPlace(manifest, staging, dataDir);
      return { manifest, kekDir, kek };
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  } finally {
    lock.release();
  }
}

/** The manifest, once the backup folder holds exactly its files and none of them lands somewhere it must not. */
function verifiedManifest(from: string, dataDir: string, kekDir: string): Manifest {
  if (!existsSync(from)) throw new Error(`${from} does not exist`);
  const manifest = readManifest(from);
  const listed = new Set(manifest.files.map((f) => f.path));
  if (!listed.has(DATABASE_FILE)) throw new Error(`${from} holds no ${DATABASE_FILE}`);
  for (const path of listed) {
    // A backup never holds the KEK folder or the live side files: a restore must not overwrite the operator's keys.
    const top = path.split('/')[0] as string;
    if (isInside(join(dataDir, path), kekDir) || (path !== DATABASE_FILE && LEFT_OUT_OF_BACKUPS.has(top))) {
      throw new Error(`${from} lists ${path}, which no backup holds`);
    }
  }
  const found = listPlainFiles(from).filter((path) => path !== MANIFEST_FILE);
  const extra = found.filter((path) => !listed.has(path));
  const missing = [...listed].filter((path) => !found.includes(path));
  if (extra.length > 0) throw new Error(`${from} holds files its manifest does not list: ${extra.join(', ')}`);
  if (missing.length > 0) throw new Error(`${from} lacks files its manifest lists: ${missing.join(', ')}`);
  return manifest;
}

/** Copies every file into `staging`, checking each digest, then the database; returns the KEK files it needs. */
function stage(from: string, manifest: Manifest, staging: string, kekDir: string): KekFileStatus[] {
  for (const entry of manifest.files) {
    mkdirSync(dirname(join(staging, entry.path)), { recursive: true, mode: 0o700 });
    const copied = hashFile(join(from, entry.path), join(staging, entry.path));
    if (copied.sha256 !== entry.sha256 || copied.bytes !== entry.bytes) {
      throw new Error(`${entry.path} in ${from} does not match its manifest (damaged or altered): nothing restored`);
    }
  }
  const facts = inspectDatabase(join(staging, DATABASE_FILE), kekDir, 'verify');
  if (facts.latest > latestKnownMigration()) {
    throw new Error(`${from} was made by a newer meshgate (its schema is ahead of this build's): use that version`);
  }
  return [...facts.kek];
}

function moveIntoPlace(manifest: Manifest, staging: string, dataDir: string): void {
  const folders = new Set<string>([dataDir]);
  for (const { path } of manifest.files) {
    const target = join(dataDir, path);
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    if (existsSync(target)) throw new Error(`${target} appeared during the restore`);
    renameSync(join(staging, path), target);
    folders.add(dirname(target));
  }
  for (const folder of folders) syncDir(folder);
}

/** Everything in the data dir that a restore would replace: all but the KEK folder and the serve lock. */
function contentOf(dataDir: string, kekDir: string): string[] {
  const keep = [kekDir, join(dataDir, SERVE_LOCK_FILE)];
  return walkExcept(dataDir, keep, (path) => [path]);
}

/** Removes everything in `dir` except the `keep` paths (and the folders that lead to them). */
function clearExcept(dir: string, keep: readonly string[]): void {
  walkExcept(dir, keep, (path) => {
    rmSync(path, { recursive: true, force: true });
    return [];
  });
}

/** Calls `visit` on each top-most entry of `dir` that neither is nor leads to a kept path. */
function walkExcept(dir: string, keep: readonly string[], visit: (path: string) => string[]): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (keep.includes(path)) return [];
    if (entry.isDirectory() && keep.some((kept) => isInside(kept, path))) return walkExcept(path, keep, visit);
    return visit(path);
  });
}
