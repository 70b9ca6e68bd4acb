/**
 * The executable's assets as files (gateway/shipped.ts says which and why):
 * written once to the private cache folder named by version and content
 * hash, and checked against the manifest at every start. Kept apart from
 * shipped.ts, which also serves a checkout, so the executable's main
 * script (app/cli/sea-main.ts) carries only this.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, lstatSync, mkdirSync, openSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import * as sea from 'node:sea';
import { BUILD_INFO } from './build-info.ts';

/** The executable's asset listing the shipped files, their places in ASSET_ARCHIVE and their content hash. */
export const ASSET_MANIFEST = 'manifest.json';
/** The executable's asset holding every shipped file, one after another (scripts/build.ts says why one). */
export const ASSET_ARCHIVE = 'files.bin';
/** The shipped file holding the SQLite addon. */
export const SQLITE_ADDON_ASSET = 'better_sqlite3.node';
/** The folder of the bundle's assets: its entry (BUNDLE_ENTRY) and the chunks it imports. */
export const BUNDLE_ASSETS = 'bundle/';
export const BUNDLE_ENTRY = 'meshgate.mjs';

export interface ShippedFile {
  /** Its contents' SHA-256 (hex). */
  readonly sha256: string;
  /** Where its bytes are in ASSET_ARCHIVE. */
  readonly offset: number;
  readonly size: number;
}

export interface AssetManifest {
  /** Of all the files: names the cache folder. */
  readonly hash: string;
  /** Each file by its name in the cache folder. */
  readonly files: Readonly<Record<string, ShippedFile>>;
}

/**
 * The shipped files whose name passes `which`, in place and checked in the private cache folder; the folder.
 * The executable's main script (app/cli/sea-main.ts) places the bundle's, the bundle the others.
 */
export function placeAssets(which: (name: string) => boolean): string {
  const manifest = JSON.parse(sea.getAsset(ASSET_MANIFEST, 'utf8')) as AssetManifest;
  const folder = join(cacheFolder(), `${BUILD_INFO.version}-${manifest.hash}`);
  privateFolder(folder);
  for (const [name, file] of Object.entries(manifest.files)) if (which(name)) writeOnce(folder, name, file);
  return folder;
}

/**
 * The first of: systemd's $CACHE_DIRECTORY (the unit's CacheDirectory=, systemd.exec(5); the first of a
 * colon-separated list), $XDG_CACHE_HOME/meshgate when absolute (a relative one is to be ignored: XDG Base Directory
 * spec), ~/.cache/meshgate. When none of them can be made (a service user whose home is not writable, a read-only
 * home), a folder of this user's in the temp dir: `--version` or `restore` must not fail for want of a cache.
 */
function cacheFolder(): string {
  const systemd = process.env.CACHE_DIRECTORY?.split(':')[0];
  if (systemd && isAbsolute(systemd)) return privateFolder(systemd);
  const xdg = process.env.XDG_CACHE_HOME;
  const home = xdg && isAbsolute(xdg) ? join(xdg, 'meshgate') : join(homedir(), '.cache', 'meshgate');
  try {
    return privateFolder(home);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EROFS' && code !== 'EPERM' && code !== 'ENOENT') throw error;
    return privateFolder(join(tmpdir(), `meshgate-cache-${process.getuid?.() ?? 'user'}`));
  }
}

/** Creates the folder (0700) or accepts it only if it is a real folder of this user that no one else may write. */
function privateFolder(path: string): string {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const stat = lstatSync(path);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o022) !== 0) {
    const mode = (stat.mode & 0o777).toString(8);
    throw new Error(
      `the cache folder ${path} is not this user's alone (owner uid ${stat.uid}, mode ${mode}): ` +
        'make it so, or point CACHE_DIRECTORY or XDG_CACHE_HOME at a folder of your own',
    );
  }
  return path;
}

/**
 * A file's SHA-256 (hex), null when it cannot be read. Read in 64 KiB pieces into one buffer: a whole-file read of
 * the SQLite addon or the bundle's entry (megabytes) would be a large malloc freed at once, after which glibc keeps
 * that much more of its heap at every start (its dynamic trim threshold; bench/README.md, startup).
 */
const piece = Buffer.alloc(64 * 1024);

function sha256Of(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const hash = createHash('sha256');
    for (let read = readSync(fd, piece); read > 0; read = readSync(fd, piece)) hash.update(piece.subarray(0, read));
    return hash.digest('hex');
  } finally {
    closeSync(fd);
  }
}

/**
 * The shipped file in the folder: kept when its contents have the manifest's hash (so the executable's own copy is
 * not paged in), else written beside, under a name no other start uses (processes in separate containers sharing
 * the folder may have the same pid), and renamed into place, so a concurrent start or an interrupted one never
 * leaves a partial file to be loaded. The archive's bytes are checked against the manifest before they are written.
 */
function writeOnce(folder: string, name: string, shipped: ShippedFile): void {
  const file = join(folder, name);
  if (sha256Of(file) === shipped.sha256) return;
  const bytes = new Uint8Array(sea.getRawAsset(ASSET_ARCHIVE), shipped.offset, shipped.size);
  if (createHash('sha256').update(bytes).digest('hex') !== shipped.sha256)
    throw new Error(`the executable's copy of ${name} does not match its manifest: the executable is damaged`);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const staging = `${file}.${randomBytes(8).toString('hex')}.tmp`;
  try {
    writeFileSync(staging, bytes, { mode: 0o600, flag: 'wx' });
    renameSync(staging, file);
  } finally {
    rmSync(staging, { force: true });
  }
}
