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
 */
import { enableCompileCache } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { versionLine } from '../../gateway/build-info.ts';
import { BUNDLE_ASSETS, BUNDLE_ENTRY, placeAssets } from '../../gateway/shipped-assets.ts';

function start(): Promise<unknown> {
  // Answered before any file is placed: asking an installed executable its version writes nothing.
  const command = process.argv[2];
  if (command === '--version' || command === 'version') {
    process.stdout.write(`${versionLine()}\n`);
    return Promise.resolve();
  }
  const folder = placeAssets((name) => name.startsWith(BUNDLE_ASSETS));
  enableCompileCache(join(folder, 'compile-cache'));
  return import(pathToFileURL(join(folder, BUNDLE_ASSETS, BUNDLE_ENTRY)).href);
}

// As app/cli/main.ts reports a failure: its message, no stack trace.
new Promise((resolve) => resolve(start())).catch((error: unknown) => {
  process.stderr.write(`meshgate: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
