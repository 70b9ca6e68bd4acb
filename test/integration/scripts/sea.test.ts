/**
 * The single executable as an operator gets it: dist/meshgate copied alone
 * into an empty folder outside the checkout and run there with a clean
 * environment — no NODE_PATH, no Node.js on PATH, no node_modules within
 * reach, a cache dir of its own — for `--version`, `serve`, `meshgate smoke`
 * against it, and SIGTERM; and its cache dir refused when another user could
 * plant code in it. scripts/build.sh builds the executable first when it is
 * older than the sources (CI has built it before the tests).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, type StdioOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { chmod, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

interface Install {
  /** The folder holding only the executable, the working directory of every run. */
  dir: string;
  home: string;
  cache: string;
  exe: string;
  /** Every gateway served from this install, killed when the test ends. */
  served: ChildProcess[];
  env: Record<string, string>;
}

/**
 * The executable copied into a fresh home. When the test ends, every gateway served from it is killed and waited for,
 * then the home removed, in one hook (node skips a test's later after hooks once one throws, and a removal racing a
 * live gateway's writes can throw).
 */
function install(t: { after(fn: () => unknown): void }): Install {
  execFileSync('bash', [join(ROOT, 'scripts', 'build.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const home = mkdtempSync(join(tmpdir(), 'meshgate-sea-'));
  const served: ChildProcess[] = [];
  t.after(async () => {
    for (const child of served) if (child.exitCode === null && child.signalCode === null) await killed(child);
    rmSync(home, { recursive: true, force: true, maxRetries: 3 });
  });
  const dir = join(home, 'opt');
  mkdirSync(dir);
  const exe = join(dir, 'meshgate');
  copyFileSync(join(ROOT, 'dist', 'meshgate'), exe); // with its mode: executable
  const cache = join(home, 'cache');
  return { dir, home, cache, exe, served, env: { PATH: '/usr/bin:/bin', HOME: home, XDG_CACHE_HOME: cache } };
}

function killed(child: ChildProcess): Promise<unknown> {
  const closed = once(child, 'close');
  child.kill('SIGKILL');
  return closed;
}

function run(at: Install, args: string[]): { code: number | null; stdout: string; stderr: string } {
  try {
    const stdio: StdioOptions = ['ignore', 'pipe', 'pipe'];
    const stdout = execFileSync(at.exe, args, { cwd: at.dir, env: at.env, encoding: 'utf8', stdio });
    return { code: 0, stdout, stderr: '' };
  } catch (error) {
    const { status, stdout, stderr } = error as { status: number | null; stdout: string; stderr: string };
    return { code: status, stdout, stderr };
  }
}

function serve(at: Install) {
  const data = join(at.home, 'data');
  const child = spawn(at.exe, ['serve', '--data-dir', data, '--https-port', '0', '--log-level', 'warn'], {
    cwd: at.dir,
    env: at.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  at.served.push(child);
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
  });
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const origin = /meshgate origin (\S+)/.exec(out)?.[1];
      if (origin) resolve(origin);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}${err}`)));
  });
  return { child, ready, ca: join(data, 'tls', 'ca.pem'), output: () => out, errors: () => err };
}

function stopped(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('close', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

test('meshgate --version names the version, the commit and the Node.js inside', (t) => {
  const at = install(t);
  const { code, stdout } = run(at, ['--version']);
  assert.equal(code, 0);
  const [, version, commit, node] = /^meshgate (\S+) \(commit (\S+), Node\.js (\S+)\)\n$/.exec(stdout) ?? [];
  assert.equal(version, VERSION);
  assert.match(commit ?? '', /^([0-9a-f]{40}(-dirty)?|unknown)$/);
  assert.match(node ?? '', /^\d+\.\d+\.\d+$/);
});

test('the executable alone, outside the checkout: serve, meshgate smoke against it, SIGTERM', async (t) => {
  const at = install(t);
  const gateway = serve(at);
  const origin = await gateway.ready;
  assert.match(gateway.output(), /meshgate bootstrap admin: username=admin password=\S+/, 'first start');

  const smoke = run(at, ['smoke', '--origin', origin, '--cacert', gateway.ca]);
  assert.equal(smoke.code, 0, `${smoke.stdout}${smoke.stderr}`);
  const passed = [...smoke.stdout.matchAll(/^PASS\s+(\S+)\s/gm)].map((m) => m[1]);
  assert.deepEqual(passed, ['home', 'api_ping', 'login_redirect', 'logout']);

  assert.equal(await stopped(gateway.child), 0);
  assert.match(gateway.output(), /meshgate stopped \(SIGTERM\)\n$/);
  assert.equal(gateway.errors(), '', 'nothing on stderr');

  // The shipped files were written once, to a folder of this user's alone named by version and content hash.
  const [folder, ...others] = readdirSync(join(at.cache, 'meshgate'));
  assert.ok(folder && others.length === 0);
  assert.match(folder, new RegExp(`^${VERSION.replaceAll('.', '\\.')}-[0-9a-f]{16}$`));
  const shipped = join(at.cache, 'meshgate', folder);
  assert.equal((await stat(shipped)).mode & 0o777, 0o700);
  assert.equal((await stat(join(shipped, 'better_sqlite3.node'))).mode & 0o777, 0o600);
  assert.ok(readdirSync(join(shipped, 'migrations')).some((name) => name.endsWith('.sql')));
  // The bundle: its entry and the chunks it imports on first use, one file each.
  const bundle = readdirSync(join(shipped, 'bundle'));
  assert.ok(bundle.includes('meshgate.mjs') && bundle.length > 1, bundle.join(' '));
  assert.deepEqual(readdirSync(at.dir), ['meshgate'], 'nothing written beside the executable');
});

test('shipped files changed in the cache are written again from the executable before they are loaded', async (t) => {
  const at = install(t);
  const first = serve(at);
  await first.ready;
  assert.equal(await stopped(first.child), 0);
  const [folder] = readdirSync(join(at.cache, 'meshgate'));
  // The addon the database opens, and the bundle's entry the executable imports first.
  const planted = ['better_sqlite3.node', join('bundle', 'meshgate.mjs')].map((name) => {
    const file = join(at.cache, 'meshgate', folder as string, name);
    const original = readFileSync(file);
    writeFileSync(file, 'process.exit(42);');
    return { file, original };
  });
  const gateway = serve(at);
  await gateway.ready;
  for (const { file, original } of planted) assert.ok(readFileSync(file).equals(original), file);
  assert.equal(await stopped(gateway.child), 0);
});

test('a cache dir others may write is refused, with the reason and no stack trace', async (t) => {
  const at = install(t);
  mkdirSync(join(at.cache, 'meshgate'), { recursive: true });
  await chmod(join(at.cache, 'meshgate'), 0o777);
  const { code, stdout, stderr } = run(at, ['serve', '--data-dir', join(at.home, 'data'), '--https-port', '0']);
  assert.notEqual(code, 0);
  assert.doesNotMatch(stdout, /meshgate listening/);
  assert.match(stderr, /^meshgate: the cache folder \S+ is not this user's alone \(owner uid \d+, mode 777\)/);
  assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
  assert.ok(!readdirSync(join(at.cache, 'meshgate')).length, 'nothing written into it');
});
