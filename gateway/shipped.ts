/**
 * The files the gateway reads at run time that ship with it: the SQLite
 * addon (better-sqlite3's compiled binding) and both engines' database migrations.
 *
 * Run from a checkout — the sources (the tests) or the bundle bin/meshgate
 * runs (dist/meshgate.cjs) — they are the checkout's own files. Inside the
 * single executable (dist/meshgate) they are assets of the executable
 * (https://nodejs.org/api/single-executable-applications.html); dlopen() and
 * drizzle's migrator need real files, so they are written once to a folder
 * named by version and content hash under the user's cache dir
 * ($XDG_CACHE_HOME/meshgate/<version>-<hash>/, else ~/.cache/…) and read
 * from there, each start checking their contents. The folder must be this user's alone: a file planted in it by
 * another user would be code loaded into the gateway.
 */
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import * as sea from 'node:sea';
import { fileURLToPath } from 'node:url';
import { BUILD_INFO } from './build-info.ts';

export interface ShippedFiles {
  /** drizzle's migrations folder (meta/_journal.json and the .sql files). */
  readonly migrationsFolder: string;
  /** The same for the PostgreSQL engine. */
  readonly pgMigrationsFolder: string;
  /** The loaded better-sqlite3 addon, for its `nativeBinding` option. */
  readonly sqliteAddon: object;
}

/** The executable's asset listing its other assets and their content hash (scripts/build.ts writes it). */
export const ASSET_MANIFEST = 'manifest.json';
/** The asset holding the SQLite addon. */
export const SQLITE_ADDON_ASSET = 'better_sqlite3.node';

export interface AssetManifest {
  /** Of all the files: names the cache folder. */
  readonly hash: string;
  /** Each file's SHA-256 (hex) by its asset name. */
  readonly files: Readonly<Record<string, string>>;
}

let shipped: ShippedFiles | null = null;

export function shippedFiles(): ShippedFiles {
  shipped ??= sea.isSea() ? fromExecutable() : fromCheckout();
  return shipped;
}

function fromCheckout(): ShippedFiles {
  // This file is one folder below the checkout's root, and so is the bundle (dist/meshgate.cjs) it is built into.
  const root = fileURLToPath(new URL('..', import.meta.url));
  const load = createRequire(join(root, 'package.json'));
  // better-sqlite3's own lookup (a compiled build, else its prebuilt binary for this platform), run from its own
  // folder: inside a bundle its default lookup would search beside the bundle.
  const binding = join(dirname(load.resolve('better-sqlite3/package.json')), 'lib', 'binding.js');
  const { getBinding } = load(binding) as { getBinding(nativeBinding: null): object };
  return {
    migrationsFolder: join(root, 'data', 'migrations'),
    pgMigrationsFolder: join(root, 'data', 'migrations-pg'),
    sqliteAddon: getBinding(null),
  };
}

function fromExecutable(): ShippedFiles {
  const manifest = JSON.parse(sea.getAsset(ASSET_MANIFEST, 'utf8')) as AssetManifest;
  const folder = join(cacheHome(), 'meshgate', `${BUILD_INFO.version}-${manifest.hash}`);
  privateFolder(dirname(folder));
  privateFolder(folder);
  for (const [name, sha256] of Object.entries(manifest.files)) writeOnce(folder, name, sha256);
  const addon = { exports: {} };
  process.dlopen(addon, join(folder, SQLITE_ADDON_ASSET));
  return {
    migrationsFolder: join(folder, 'migrations'),
    pgMigrationsFolder: join(folder, 'migrations-pg'),
    sqliteAddon: addon.exports,
  };
}

/** $XDG_CACHE_HOME when absolute (a relative one is to be ignored: XDG Base Directory spec), else ~/.cache. */
function cacheHome(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  return xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.cache');
}

/** Creates the folder (0700) or accepts it only if it is a real folder of this user that no one else may write. */
function privateFolder(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const stat = lstatSync(path);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o022) !== 0) {
    const mode = (stat.mode & 0o777).toString(8);
    throw new Error(
      `the cache folder ${path} is not this user's alone (owner uid ${stat.uid}, mode ${mode}): ` +
        'make it so, or point XDG_CACHE_HOME at a folder of your own',
    );
  }
}

/**
 * The asset as a file in the folder: kept when its contents have the asset's hash (checked against the manifest, so
 * the executable's own copy is not paged in), else written beside and renamed into place, so a concurrent start or
 * an interrupted one never leaves a partial file to be loaded.
 */
function writeOnce(folder: string, name: string, sha256: string): void {
  const file = join(folder, name);
  let current: string | null = null;
  try {
    current = createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    // absent: written below
  }
  if (current === sha256) return;
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const staging = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(staging, new Uint8Array(sea.getRawAsset(name)), { mode: 0o600, flag: 'w' });
    renameSync(staging, file);
  } finally {
    rmSync(staging, { force: true });
  }
}
