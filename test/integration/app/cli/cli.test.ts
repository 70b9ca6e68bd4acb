/**
 * The operator interface as scripts use it: the real `meshgate` process (test/helpers/artifact.ts: the executable
 * as the unit starts it, unless MESHGATE_TEST_TARGET says otherwise), its printed lines and its exit codes.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { meshgateLaunch } from '../../../helpers/artifact.ts';
import { runMeshgate } from '../../../helpers/cli.ts';

function run(
  args: string[],
  env: Record<string, string> = {},
  stdin?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const launch = meshgateLaunch(args, env);
    const child = spawn(launch.file, launch.args, { env: launch.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.stdin.end(stdin ?? '');
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function serve(dataDir: string, extra: string[] = [], env: Record<string, string> = {}) {
  const launch = meshgateLaunch(
    ['serve', '--data-dir', dataDir, '--https-port', '0', '--log-level', 'warn', ...extra],
    env,
  );
  const child = spawn(launch.file, launch.args, { env: launch.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (/meshgate origin /.test(out)) resolve(out);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
  return { child, ready, output: () => out };
}

/** Sends the signal and resolves with the exit code once stdout has closed (every line read). */
function stopped(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('close', (code) => resolve(code));
    child.kill(signal);
  });
}

/** The status of a password login at the gateway listening at `base`. */
async function login(base: string, dataDir: string, username: string, password: string): Promise<number> {
  const agent = new Agent({ connect: { ca: readFileSync(join(dataDir, 'tls', 'ca.pem'), 'utf8') } });
  try {
    const res = await request(`${base}/api/auth/token`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username, password, grant_type: 'password' }).toString(),
    });
    await res.body.dump();
    return res.statusCode;
  } finally {
    await agent.close();
  }
}

function baseOf(out: string): string {
  const port = /meshgate listening https:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1];
  assert.ok(port, out);
  return `https://localhost:${port}`;
}

test(
  'meshgate serve prints its listening lines and the one-time admin ' +
    'password, answers over verified TLS, stops on SIGTERM',
  async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const { child, ready, output } = serve(dataDir, ['--http-port', '0', '--cluster-name', 'cli-test']);
    const out = await ready;
    const https = /meshgate listening (https:\/\/127\.0\.0\.1:(\d+))/.exec(out);
    assert.ok(https, out);
    assert.match(out, /meshgate listening http:\/\/127\.0\.0\.1:\d+/);
    const password = /meshgate bootstrap admin: username=admin password=(\S+)/.exec(out)?.[1];
    assert.ok(password, 'generated password printed once');
    const agent = new Agent({ connect: { ca: readFileSync(join(dataDir, 'tls', 'ca.pem'), 'utf8') } });
    t.after(() => agent.close());
    const base = `https://localhost:${https[2]}`;
    const ping = await request(`${base}/api/ping`, { dispatcher: agent });
    assert.equal(ping.statusCode, 200);
    await ping.body.dump();
    assert.equal(await login(base, dataDir, 'admin', password), 200);

    // A user added by the CLI while the gateway runs can log in at once.
    const added = await run(['user', 'add', 'bob', '--data-dir', dataDir, '--password-stdin'], {}, 'bob-password-1\n');
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /created user bob/);
    assert.ok(!added.stdout.includes('bob-password-1'), 'a password from stdin is never echoed');
    assert.equal(await login(base, dataDir, 'bob', 'bob-password-1'), 200);
    assert.equal(await stopped(child), 0, 'graceful stop exits 0');
    assert.match(output(), /meshgate stopped \(SIGTERM\)\n$/, 'the last line says it stopped, and why');

    const second = serve(dataDir);
    const out2 = await second.ready;
    assert.ok(!out2.includes('bootstrap admin'), 'the password is printed only at first start');
    assert.equal(await stopped(second.child, 'SIGINT'), 0);
    assert.match(second.output(), /meshgate stopped \(SIGINT\)\n$/);
  },
);

test('meshgate user reset-password prints a new password once; duplicates and bad usage exit non-zero', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  assert.equal((await run(['user', 'add', 'carol', '--data-dir', dataDir])).code, 0);
  const dup = await run(['user', 'add', 'carol', '--data-dir', dataDir]);
  assert.equal(dup.code, 1);
  assert.match(dup.stderr, /user_exists/);
  const reset = await run(['user', 'reset-password', 'carol', '--data-dir', dataDir]);
  assert.equal(reset.code, 0);
  assert.match(reset.stdout, /password: \S{20,} \(shown once\)/);
  const list = await run(['user', 'list', '--data-dir', dataDir]);
  assert.match(list.stdout, /carol/);
  assert.equal((await run(['user', 'frobnicate', '--data-dir', dataDir])).code, 2);
  assert.equal((await run(['no-such-command'])).code, 2);
});

test('a bad configuration stops start with every problem listed, exit 2', async () => {
  const res = await run(['serve', '--https-port', 'x', '--log-level', 'loud'], { PLATFORM_ORIGIN: 'http://insecure' });
  assert.equal(res.code, 2);
  for (const needle of ['httpsPort', 'logLevel', 'origin']) assert.match(res.stderr, new RegExp(needle));
  assert.ok(!/at .*\.ts:\d+/.test(res.stderr), 'no stack trace');
});

test('a data dir the kernel refuses (under /proc) stops start with one line, with or without workers', async () => {
  for (const workers of ['1', '2']) {
    const res = await run([
      'serve',
      '--data-dir',
      '/proc/meshgate-test/data',
      '--https-port',
      '0',
      '--workers',
      workers,
    ]);
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, /^meshgate: cannot create the folder \/proc\/meshgate-test: ENOENT$/m);
    assert.doesNotMatch(res.stdout, /password/i);
  }
});

test('an admin listener off loopback with no metrics token stops start, exit 2, naming the settings', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-cli-admin-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.json');
  // Refused at config load, before anything is bound or written. A documentation address (RFC 5737), which no host
  // here holds: a gateway that let the setting through could not listen there either, so nothing leaves loopback.
  writeFileSync(file, JSON.stringify({ admin: { port: 0, bind: '192.0.2.1' } }));
  const dataDir = join(dir, 'data');
  const res = await runMeshgate(['serve', '--config', file, '--data-dir', dataDir, '--https-port', '0']);
  assert.equal(res.code, 2, res.out);
  for (const setting of ['PLATFORM_ADMIN_BIND', 'PLATFORM_METRICS_TOKEN', 'PLATFORM_ALLOW_UNAUTHENTICATED_METRICS'])
    assert.match(res.out, new RegExp(setting));
  assert.equal(existsSync(dataDir), false, 'nothing was set up');
});

test('a port in use stops start before the admin exists, no password printed; the next start prints it', async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.after(() => holder.close());
  const port = String((holder.address() as AddressInfo).port);
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));

  const refused = await run(['serve', '--data-dir', dataDir, '--https-port', port, '--log-level', 'warn']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
  assert.ok(!/at .*\.ts:\d+/.test(refused.stderr), 'no stack trace');
  assert.ok(!/password/i.test(refused.stdout + refused.stderr), 'no password printed');
  const users = await run(['user', 'list', '--data-dir', dataDir]);
  assert.equal(users.code, 0, users.stderr);
  assert.equal(users.stdout, '', 'no admin was created');

  const { child, ready } = serve(dataDir);
  const out = await ready;
  const password = /meshgate bootstrap admin: username=admin password=(\S+)/.exec(out)?.[1];
  assert.ok(password, out);
  assert.equal(await login(baseOf(out), dataDir, 'admin', password), 200);
  assert.equal(await stopped(child), 0);
});

test('a domain failing after the admin was created prints its password with the failure', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const catalog = join(dataDir, 'packages.json');
  writeFileSync(catalog, '{not json');
  // The jobs domain starts after auth and refuses an unreadable package catalog.
  const broken = { PLATFORM_JOBS_PACKAGE_CATALOG: catalog, PLATFORM_JOBS_WHEEL_DIR: dataDir };
  const failed = await run(['serve', '--data-dir', dataDir, '--https-port', '0', '--log-level', 'warn'], broken);
  assert.equal(failed.code, 1);
  assert.match(failed.stderr, /catalogFile/);
  const password = /meshgate bootstrap admin: username=admin password=(\S+)/.exec(failed.stdout)?.[1];
  assert.ok(password, `the password is shown, not lost: ${failed.stdout}`);

  writeFileSync(catalog, '[]');
  const { child, ready } = serve(dataDir, [], broken);
  const out = await ready;
  assert.ok(!out.includes('bootstrap admin'), 'shown once');
  assert.equal(await login(baseOf(out), dataDir, 'admin', password), 200);
  assert.equal(await stopped(child), 0);
});

test('serve --help lists every setting of the README table', async () => {
  const help = await run(['serve', '--help']);
  assert.equal(help.code, 0);
  const readme = readFileSync(fileURLToPath(new URL('../../../../README.md', import.meta.url)), 'utf8');
  const rows = [...readme.matchAll(/^\|.*$/gm)].map(([row]) => row);
  const documented = rows.flatMap((row) => [...row.matchAll(/`(PLATFORM_[A-Z0-9_]+|--[a-z-]+)`/g)].map((m) => m[1]));
  assert.ok(documented.length > 40, 'the README table was found');
  for (const name of documented) assert.ok(help.stdout.includes(name as string), `${name} missing from serve --help`);
});

test('a usage mistake names the missing or unknown flag and exits 2, for every subcommand', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const cases: [string[], RegExp][] = [
    [['smoke'], /^meshgate smoke: missing --origin$/m],
    [['smoke', '--origin'], /'--origin <value>' argument missing/],
    [['smoke', '--origin', 'https://localhost:1', '--frobnicate'], /Unknown option '--frobnicate'/],
    [['smoke', '--origin', 'localhost:8443'], /--origin 'localhost:8443' is not an https:\/\/ URL/],
    [['smoke', '--origin', 'https://x', '--cacert', join(dataDir, 'no.pem')], /--cacert: cannot read .*ENOENT/],
    [['serve', '--https-port'], /^meshgate serve: --https-port needs a value$/m],
    [['serve', '--frobnicate'], /^meshgate serve: unknown flag '--frobnicate'$/m],
    [['deploy', 'add', '--kind', 'model'], /^meshgate deploy: missing --name, --upstream$/m],
    [['deploy', 'get'], /deploy get: missing <id>/],
    [['deploy', 'launch'], /unknown action 'launch'/],
    [['deploy', 'list', '--colour'], /Unknown option '--colour'/],
    [['user', 'list', '--frobnicate'], /^meshgate user: Unknown option '--frobnicate'/m],
    [['rotate-kek', '--batches', '3'], /^meshgate rotate-kek: Unknown option '--batches'/m],
    [['federation', 'pair'], /missing --initiator-url/],
  ];
  for (const [args, message] of cases) {
    const res = await run([...args, '--data-dir', dataDir]);
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, message, args.join(' '));
    assert.ok(!/at .*\.ts:\d+/.test(res.stderr), `${args.join(' ')}: no stack trace`);
    const synopsis = new RegExp(`^usage:\nmeshgate ${args[0]}`, 'm');
    if (args[0] !== 'federation') assert.match(res.stderr, synopsis, 'then the synopsis');
  }
});
