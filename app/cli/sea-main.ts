/**
 * The single executable's main script (scripts/build.ts makes it the
 * executable's entry): it places the bundle's files — the entry and the
 * chunks it imports on first use — in the private cache folder
 * (gateway/shipped.ts), turns on Node's compile cache beside them, and
 * imports the entry, which runs the command. A chunk stays a file no start
 * reads until something imports it, where a single script would keep all of
 * its source in memory (bench/README.md, startup). The compile cache keeps
 * V8's code for the modules and the functions a start compiled
 * (https://nodejs.org/api/module.html#module-compile-cache), so a warm start
 * parses nothing.
 *
 * First, unless its environment already has them, it starts itself again with glibc's malloc settings
 * (app/cli/malloc-defaults.ts): the same process (execve keeps the pid, the open descriptors and the arguments),
 * one more start of Node.js, about 20 ms.
 */
import { enableCompileCache } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUNDLE_ASSETS, BUNDLE_ENTRY, placeAssets } from '../../gateway/shipped-assets.ts';
import { withMallocDefaults } from './malloc-defaults.ts';

const mallocEnv = withMallocDefaults(process.env);
if (mallocEnv) {
  try {
    // An executable's argv[1] repeats argv[0] (https://nodejs.org/api/single-executable-applications.html).
    process.execve?.(process.execPath, [process.argv0, ...process.argv.slice(2)], mallocEnv);
  } catch {
    // Not started again (the file replaced or gone since this start): the settings are worth memory, not function.
  }
}

function start(): Promise<unknown> {
  const folder = placeAssets((name) => name.startsWith(BUNDLE_ASSETS));
  enableCompileCache(join(folder, 'compile-cache'));
  return import(pathToFileURL(join(folder, BUNDLE_ASSETS, BUNDLE_ENTRY)).href);
}

// As app/cli/main.ts reports a failure: its message, no stack trace.
new Promise((resolve) => resolve(start())).catch((error: unknown) => {
  process.stderr.write(`meshgate: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
