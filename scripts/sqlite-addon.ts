/**
 * The SQLite addon the executable carries (scripts/build.ts) and whose shared libraries the Debian package depends
 * on (scripts/package-deb.ts): the one better-sqlite3 itself loads on this machine.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const load = createRequire(import.meta.url);

/** The addon's path, from the module cache after loading it. */
export function sqliteAddonFile(): string {
  const packageDir = dirname(load.resolve('better-sqlite3/package.json'));
  (load(join(packageDir, 'lib', 'binding.js')) as { getBinding(nativeBinding: null): object }).getBinding(null);
  const file = Object.keys(load.cache).find((key) => key.startsWith(packageDir) && key.endsWith('.node'));
  if (!file) throw new Error('better-sqlite3 loaded no addon');
  return file;
}
