/**
 * Builds meshgate from this checkout (scripts/build.sh runs it when the
 * outputs are older than their inputs):
 *
 *   node scripts/build.ts bundle   dist/meshgate.mjs: app/cli/main.ts and every npm package it uses, as ES modules
 *                                  (what bin/meshgate runs): the entry, and beside it one chunk per part that is
 *                                  only imported on first use (dist/meshgate-<hash>.mjs)
 *   node scripts/build.ts sea      that, then dist/meshgate: the bundle, its main script (app/cli/sea-main.ts),
 *                                  the SQLite addon and the migrations injected into a copy of this Node.js (a
 *                                  single executable application,
 *                                  https://nodejs.org/api/single-executable-applications.html)
 *
 * Run by Node.js itself (type stripping, scripts/build.sh), so building needs no TypeScript loader either.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { buildConsoleClient } from '../domains/serving/console/assets.ts';
import { buildPgBridge } from '../gateway/db/postgres/bridge-source.ts';
import {
  ASSET_ARCHIVE,
  ASSET_MANIFEST,
  type AssetManifest,
  BUNDLE_ASSETS,
  BUNDLE_ENTRY,
  type ShippedFile,
  SQLITE_ADDON_ASSET,
} from '../gateway/shipped-assets.ts';
import { sqliteAddonFile } from './sqlite-addon.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const ENTRY = join(DIST, BUNDLE_ENTRY);
/** The bundle's chunks: named by their content, beside the entry (code shipped.ts runs finds the checkout from it). */
/** What the bundle step writes: its parts, and the licence texts of the packages inside them. */
const SHIPPED = /^meshgate(-[A-Z0-9]+)?\.mjs(\.LEGAL\.txt)?$/;
const SEA_MAIN = join(DIST, 'sea-main.cjs');
const EXECUTABLE = join(DIST, 'meshgate');
const load = createRequire(import.meta.url);

/**
 * gateway/db/drizzle.ts loads drizzle-orm's CommonJS build through a createRequire() function named `load` (see
 * that file for why); a bundler only follows literal `require()` calls, so in the bundle those calls become them.
 */
const drizzleRequires: Plugin = {
  name: 'drizzle-requires',
  setup(builder) {
    builder.onLoad({ filter: /[\\/]gateway[\\/]db[\\/]drizzle\.ts$/ }, ({ path }) => {
      const source = readFileSync(path, 'utf8');
      const contents = source.replaceAll(/\bload\('/g, "require('");
      if (contents === source) throw new Error(`${path}: no load('…') call left to bundle`);
      return { contents, loader: 'ts' };
    });
  },
};

/**
 * Node.js's built-in modules taken with require(), not import. Importing one from an ES module makes Node build
 * its ES module facade, which reads every export once — lazy ones included: `node:http`'s loads Node's internal
 * undici, `node:crypto`'s the Web Crypto API — tens of milliseconds and megabytes of heap at every start for code
 * the gateway never runs (bench/README.md, startup). esbuild's wrapper for a CommonJS module reads an export only
 * when the code does.
 *
 * Static imports only. A dynamic `import('http')` stays Node's own: esbuild gives an import() of a CommonJS module
 * split into a chunk of its own a namespace holding `default` alone (that chunk is `export default require_x()`), so
 * `const { Agent } = await import('http')` — the OpenTelemetry exporter's agent and request factories, the AWS SDK's
 * AsyncLocalStorage — would find undefined. An import() runs on first use, never at start, so the facade it builds
 * costs nothing at start; test/integration/gateway/observability/tracing-shipped.test.ts exports through it.
 */
const BUILTIN_NAMESPACE = 'node-builtin';
const builtinsRequired: Plugin = {
  name: 'builtins-required',
  setup(builder) {
    const builtin = new RegExp(`^(node:.*|${builtinModules.map((name) => name.replaceAll('/', '\\/')).join('|')})$`);
    builder.onResolve({ filter: builtin }, ({ path, kind }) =>
      kind === 'import-statement' ? { path, namespace: BUILTIN_NAMESPACE } : { path, external: true },
    );
    builder.onLoad({ filter: /.*/, namespace: BUILTIN_NAMESPACE }, ({ path }) => ({
      contents: `module.exports = require(${JSON.stringify(path)});`,
      loader: 'js',
    }));
  },
};

/**
 * The bundle is ASCII, or the build fails. V8 keeps a module's source for as long as the module lives (lazy
 * compilation, Function.prototype.toString), and Node.js decodes a file that is not all ASCII into two bytes a
 * character: one name in a licence comment doubled the entry's 1.2 MB in every gateway's heap. esbuild prints code
 * in ASCII (`charset: 'ascii'`, its default) except inside regular expressions and raw template text, where an escape
 * would change the meaning; licence comments go to files of their own (`legalComments: 'external'`). So a character
 * beyond ASCII left in the code is one only its author can rewrite: named here instead of escaped behind their back.
 */
function assertAscii(name: string, text: string): void {
  const at = text.search(/[^\0-\x7f]/);
  if (at < 0) return;
  const around = text.slice(Math.max(0, at - 60), at + 60);
  throw new Error(`${name}: a character beyond ASCII at offset ${at} (a regular expression or String.raw?): ${around}`);
}

/** HEAD's commit, `-dirty` when tracked files differ from it; `unknown` outside a git checkout. */
function commit(): string {
  const git = (...args: string[]) => execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' }).trim();
  try {
    const head = git('rev-parse', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? head : `${head}-dirty`;
  } catch {
    return 'unknown';
  }
}

/** Written beside and renamed into place: a concurrent run of bin/meshgate never starts a half-written file. */
function writeAtomically(file: string, write: (staging: string) => void): void {
  const staging = `${file}.${process.pid}.tmp`;
  try {
    write(staging);
    renameSync(staging, file);
  } finally {
    rmSync(staging, { force: true });
  }
}

/** What every esbuild run shares: Node.js, minified, the commit stamped for `meshgate --version`. */
function common(stamped: string) {
  return {
    bundle: true,
    platform: 'node',
    target: 'node22',
    minify: true,
    write: false,
    logLevel: 'warning',
    define: { MESHGATE_COMMIT: JSON.stringify(stamped) },
  } as const;
}

async function bundle(): Promise<void> {
  const stamped = commit();
  // The operator console's client is built here, once: the gateway's bundle holds neither esbuild nor its sources.
  const consoleClient = await buildConsoleClient();
  // So is the PostgreSQL bridge's worker thread, started from its text (gateway/db/postgres/bridge-source.ts).
  const pgBridge = await buildPgBridge();
  const settings = common(stamped);
  const result = await build({
    ...settings,
    entryPoints: { [BUNDLE_ENTRY.replace(/\.mjs$/, '')]: join(ROOT, 'app', 'cli', 'main.ts') },
    // ES modules, so what is imported on first use (import()) is a chunk of its own that no start reads.
    format: 'esm',
    splitting: true,
    outdir: DIST,
    chunkNames: 'meshgate-[hash]',
    outExtension: { '.js': '.mjs' },
    // The packages' licence texts, one file beside each part that carries them (shipped with it), not in its code.
    legalComments: 'external',
    plugins: [drizzleRequires, builtinsRequired],
    // Only the console's client build imports esbuild, and the bundle carries that client prebuilt.
    external: ['esbuild'],
    // The Kafka client's compression and CRC helpers read their WebAssembly from a file beside their module, which a
    // bundle does not have; the package's `bundled` entry carries it inline for bundlers.
    alias: { '@platformatic/wasm-utils': '@platformatic/wasm-utils/bundled' },
    // The CommonJS packages inside call require() for Node's built-in modules, which an ES module has not.
    banner: {
      js:
        "import{createRequire as __meshgateRequire}from'node:module';" +
        'const require=__meshgateRequire(import.meta.url);',
    },
    define: {
      ...settings.define,
      MESHGATE_CONSOLE_CLIENT: JSON.stringify(consoleClient),
      MESHGATE_PG_BRIDGE: JSON.stringify(pgBridge),
    },
  });
  mkdirSync(DIST, { recursive: true });
  const names = new Set(result.outputFiles.map((output) => output.path.slice(DIST.length + 1)));
  if (!names.has(BUNDLE_ENTRY)) throw new Error('esbuild wrote no bundle entry');
  // The chunks first, the entry that imports them last: a concurrent bin/meshgate starts the old bundle or the new.
  const outputs = [...result.outputFiles].sort((a, b) => Number(a.path === ENTRY) - Number(b.path === ENTRY));
  for (const output of outputs) {
    if (output.path.endsWith('.mjs')) assertAscii(output.path, output.text);
    writeAtomically(output.path, (staging) => writeFileSync(staging, output.contents));
  }
  for (const name of readdirSync(DIST)) if (SHIPPED.test(name) && !names.has(name)) rmSync(join(DIST, name));
  // The commit bin/meshgate compares with HEAD to know the bundle is current.
  writeFileSync(join(DIST, 'meshgate.commit'), `${stamped.replace(/-dirty$/, '')}\n`);
}

/** The executable's main script: one CommonJS file (what a single executable runs), app/cli/sea-main.ts. */
async function seaMain(): Promise<void> {
  const result = await build({
    ...common(commit()),
    entryPoints: [join(ROOT, 'app', 'cli', 'sea-main.ts')],
    format: 'cjs',
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error('esbuild wrote no main script');
  writeFileSync(SEA_MAIN, output.contents);
}

/** One engine's migrations under data/: drizzle's migrator reads the journal and the .sql files (the snapshots serve
 * drizzle-kit only). */
function migrationAssets(folder: string): Record<string, string> {
  const migrations = join(ROOT, 'data', folder);
  const sql = readdirSync(migrations).filter((name) => name.endsWith('.sql'));
  return {
    [`${folder}/meta/_journal.json`]: join(migrations, 'meta', '_journal.json'),
    ...Object.fromEntries(sql.map((name) => [`${folder}/${name}`, join(migrations, name)])),
  };
}

/**
 * The executable's two assets: every shipped file, concatenated into one (ASSET_ARCHIVE), and the manifest naming
 * each with its place in it and its content hash. One asset, not one a file: at every start Node.js walks the
 * executable's asset table, and with an asset a file that walk touched a page of the executable every few hundred
 * KiB (about 1.3 MB resident with the kernel's fault-around; bench/README.md, startup).
 */
function assets(stagingDir: string): Record<string, string> {
  const bundleFiles = readdirSync(DIST).filter((name) => SHIPPED.test(name));
  const files: Record<string, string> = {
    ...Object.fromEntries(bundleFiles.map((name) => [`${BUNDLE_ASSETS}${name}`, join(DIST, name)])),
    [SQLITE_ADDON_ASSET]: sqliteAddonFile(),
    ...migrationAssets('migrations'),
    ...migrationAssets('migrations-pg'),
  };
  const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
  const contents: Buffer[] = [];
  let offset = 0;
  const entries = Object.entries(files).map(([name, file]) => {
    const bytes = readFileSync(file);
    const entry: ShippedFile = { sha256: sha256(bytes), offset, size: bytes.length };
    contents.push(bytes);
    offset += bytes.length;
    return [name, entry] as const;
  });
  const all = entries.map(([name, { sha256 }]) => `${name} ${sha256}\n`);
  const manifest: AssetManifest = { hash: sha256(all.join('')).slice(0, 16), files: Object.fromEntries(entries) };
  const manifestFile = join(stagingDir, ASSET_MANIFEST);
  const archiveFile = join(stagingDir, ASSET_ARCHIVE);
  writeFileSync(manifestFile, JSON.stringify(manifest));
  writeFileSync(archiveFile, Buffer.concat(contents));
  return { [ASSET_MANIFEST]: manifestFile, [ASSET_ARCHIVE]: archiveFile };
}

/** Runs a build tool, its chatter (postject warns about each ELF note it cannot name) shown only when it fails. */
function quietly(command: string, args: string[]): void {
  try {
    execFileSync(command, args, { stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    process.stderr.write(`${stdout ?? ''}${stderr ?? ''}`);
    throw error;
  }
}

/** The fuse Node.js looks for to know a blob was injected (the value its docs give for postject). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

async function singleExecutable(): Promise<void> {
  await seaMain();
  const staging = join(DIST, `sea.${process.pid}`);
  mkdirSync(staging, { recursive: true });
  try {
    const blob = join(staging, 'prep.blob');
    const config = {
      main: SEA_MAIN,
      output: blob,
      disableExperimentalSEAWarning: true,
      // The main script is a few KiB; the bundle it imports has Node's compile cache (app/cli/sea-main.ts).
      useCodeCache: false,
      // bin/meshgate's memory default for a long-running gateway (bench/README.md); NODE_OPTIONS still adds to it.
      // The young generation starts at that size too: start allocates ~30 MB of short-lived objects, which in V8's
      // 1 MiB first semi-space took six scavenges; the one collection after start (app/cli/serve.ts) gives the pages
      // back. Node.js takes this flag only on its command line, not NODE_OPTIONS. `--expose-gc`: that collection runs
      // in the gateway's own context (app/process/release-memory.ts).
      execArgv: ['--max-semi-space-size=4', '--min-semi-space-size=4', '--expose-gc'],
      assets: assets(staging),
    };
    const configFile = join(staging, 'sea-config.json');
    writeFileSync(configFile, JSON.stringify(config));
    quietly(process.execPath, ['--experimental-sea-config', configFile]);
    const binary = join(staging, 'meshgate');
    copyFileSync(process.execPath, binary); // with its mode: executable
    // The Node.js binary carries ~18 MB of symbols and debug info; the dynamic symbols addons link against stay.
    quietly('strip', ['--strip-all', binary]);
    const postject = load.resolve('postject/dist/cli.js');
    quietly(process.execPath, [postject, binary, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
    renameSync(binary, EXECUTABLE);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

const target = process.argv[2];
if (target !== 'bundle' && target !== 'sea') {
  process.stderr.write('usage: node scripts/build.ts bundle|sea\n');
  process.exit(2);
}
await bundle();
if (target === 'sea') await singleExecutable();
