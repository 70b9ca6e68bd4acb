/**
 * The backup format: a directory (mode 0700) holding
 *   MANIFEST.json   what the backup holds: format and version, when it was
 *                   made, the schema level, the KEK files it needs but does
 *                   not hold, and every other file with its size and SHA-256
 *   meshgate.db     the SQLite online backup of the database (rollback
 *                   journal mode, so the file stands alone)
 *   keys/…, tls/…, issuer, …  the rest of the data dir as found
 * every file mode 0600. A directory, not a tar: it is inspected with ls and
 * sha256sum, and packed or shipped with the operator's own tools (tar,
 * restic, rsync), which already know compression and encryption.
 */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, lstatSync, openSync, readdirSync, readFileSync, readSync, writeSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { z } from 'zod';
import { SERVE_LOCK_FILE } from '../../gateway/db/serve-lock.ts';
import { DATABASE_FILES } from '../../gateway/db/storage.ts';
import { shippedFiles } from '../../gateway/shipped.ts';

export const MANIFEST_FILE = 'MANIFEST.json';

/**
 * Top-level names of a data dir a backup leaves out besides the KEK folder: the live database files (copied
 * through the backup API into meshgate.db instead), the serve lock, and job workspaces (per-run folders, logs
 * and virtualenvs that a restored gateway does not resume).
 */
export const LEFT_OUT_OF_BACKUPS: ReadonlySet<string> = new Set([...DATABASE_FILES, SERVE_LOCK_FILE, 'jobs']);
const FORMAT = 'meshgate-backup';
const FORMAT_VERSION = 1;
/** A manifest lists file names and digests: far below this even for thousands of files. */
const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;
const COPY_CHUNK_BYTES = 1024 * 1024;

/**
 * A relative path of plain names: no empty, `.`/`..` or hidden component, no absolute path, so an entry can never
 * leave the folder it is restored into (the "zip slip" of archive extractors).
 */
const PATH_COMPONENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
export function isPlainRelativePath(path: string): boolean {
  return path.length <= 1024 && path.split('/').every((part) => PATH_COMPONENT.test(part));
}

/** Whether `path` is `dir` or below it (both absolute). */
export function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !isAbsolute(rel));
}

const fileEntry = z.strictObject({
  path: z.string().refine(isPlainRelativePath, 'must be a relative path of plain names'),
  bytes: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

const manifestSchema = z.strictObject({
  format: z.literal(FORMAT),
  version: z.literal(FORMAT_VERSION),
  createdAt: z.iso.datetime(),
  /** Newest applied migration (its drizzle `created_at`, the journal's `when`): a restore refuses a newer one. */
  schema: z.strictObject({ applied: z.number().int().min(1), latest: z.number().int() }),
  /** The KEK files the database's secrets need, by name, and the folder they came from. Never their contents. */
  kek: z.strictObject({ dir: z.string(), files: z.array(z.string().regex(/^kek-v\d+\.key$/)) }),
  files: z.array(fileEntry).min(1),
});

export type Manifest = z.infer<typeof manifestSchema>;
export type FileEntry = z.infer<typeof fileEntry>;

export function newManifest(fields: Omit<Manifest, 'format' | 'version'>): Manifest {
  return { format: FORMAT, version: FORMAT_VERSION, ...fields };
}

/** The manifest of the backup at `dir`, or an error saying what is wrong with it. */
export function readManifest(dir: string): Manifest {
  const file = join(dir, MANIFEST_FILE);
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (!stat?.isFile()) throw new Error(`${dir} is not a meshgate backup: no ${MANIFEST_FILE}`);
  if (stat.size > MAX_MANIFEST_BYTES) throw new Error(`${file} is larger than any manifest (${stat.size} bytes)`);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    throw new Error(`${file} is not JSON`);
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`);
    const expected = `format ${FORMAT} v${FORMAT_VERSION}`;
    throw new Error(`${file} is not a meshgate backup manifest (${expected}): ${problems.join('; ')}`);
  }
  const paths = new Set<string>();
  for (const entry of parsed.data.files) {
    if (paths.has(entry.path) || entry.path === MANIFEST_FILE) throw new Error(`${file} lists ${entry.path} twice`);
    paths.add(entry.path);
  }
  return parsed.data;
}

/**
 * Every regular file under `dir`, relative; throws on anything else (a symlink, a device, a FIFO), which a backup
 * never holds and which a restore must not follow.
 */
export function listPlainFiles(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return listPlainFiles(dir, path);
    if (entry.isFile()) return [path];
    throw new Error(`${join(dir, path)} is neither a file nor a folder`);
  });
}

/**
 * Size and SHA-256 of `file`, read once; with `copyTo`, the same bytes go to that new file (mode 0600, never an
 * existing one), fsynced, so a restore verifies exactly the bytes it wrote.
 */
export function hashFile(file: string, copyTo?: string): Omit<FileEntry, 'path'> {
  const hash = createHash('sha256');
  const source = openSync(file, 'r');
  const target = copyTo === undefined ? null : openSync(copyTo, 'wx', 0o600);
  try {
    const chunk = Buffer.alloc(COPY_CHUNK_BYTES);
    let bytes = 0;
    for (let read = readSync(source, chunk); read > 0; read = readSync(source, chunk)) {
      const data = chunk.subarray(0, read);
      hash.update(data);
      if (target !== null) writeSync(target, data);
      bytes += read;
    }
    if (target !== null) fsyncSync(target);
    return { bytes, sha256: hash.digest('hex') };
  } finally {
    closeSync(source);
    if (target !== null) closeSync(target);
  }
}

/** Writes a small file 0600 and fsyncs it. */
export function writeSynced(file: string, text: string): void {
  const fd = openSync(file, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync of a folder: the names created or renamed in it survive a crash (rename(2) alone does not promise it). */
export function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The newest migration this build knows (the drizzle journal's `when`). */
export function latestKnownMigration(): number {
  const text = readFileSync(join(shippedFiles().migrationsFolder, 'meta', '_journal.json'), 'utf8');
  const journal = JSON.parse(text) as { entries: { when: number }[] };
  return Math.max(...journal.entries.map((e) => e.when));
}
