/**
 * The files the gateway reads at run time that ship with it: the SQLite
 * addon (better-sqlite3's compiled binding), both engines' database
 * migrations, and, inside the executable, the bundle itself.
 *
 * Run from a checkout — the sources (the tests) or the bundle bin/meshgate
 * runs (dist/meshgate.mjs) — they are the checkout's own files. Inside the
 * single executable (dist/meshgate) they are assets of the executable
 * (https://nodejs.org/api/single-executable-applications.html); dlopen(),
 * drizzle's migrator and the module loader need real files, so they are
 * written once to a folder named by version and content hash under the
 * user's cache dir ($XDG_CACHE_HOME/meshgate/<version>-<hash>/, else
 * ~/.cache/…) and read from there, each start checking their contents. The
 * folder must be this user's alone: a file planted in it by another user
 * would be code loaded into the gateway.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as sea from 'node:sea';
import { fileURLToPath } from 'node:url';
import { BUNDLE_ASSETS, placeAssets, SQLITE_ADDON_ASSET } from './shipped-assets.ts';

export interface ShippedFiles {
  /** drizzle's migrations folder (meta/_journal.json and the .sql files). */
  readonly migrationsFolder: string;
  /** The same for the PostgreSQL engine. */
  readonly pgMigrationsFolder: string;
  /** The loaded better-sqlite3 addon, for its `nativeBinding` option. */
  readonly sqliteAddon: object;
}

let shipped: ShippedFiles | null = null;

export function shippedFiles(): ShippedFiles {
  shipped ??= sea.isSea() ? fromExecutable() : fromCheckout();
  return shipped;
}

function fromCheckout(): ShippedFiles {
  // This file is one folder below the checkout's root, and so are the bundle's files (dist/*.mjs) it is built into.
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
  const folder = placeAssets((name) => !name.startsWith(BUNDLE_ASSETS));
  const addon = { exports: {} };
  process.dlopen(addon, join(folder, SQLITE_ADDON_ASSET));
  return {
    migrationsFolder: join(folder, 'migrations'),
    pgMigrationsFolder: join(folder, 'migrations-pg'),
    sqliteAddon: addon.exports,
  };
}
