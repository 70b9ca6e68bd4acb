/**
 * The operator interface as scripts use it: the real `bin/meshgate` process,
 * its printed lines, its exit codes, and the README's first command.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

const BIN = fileURLToPath(new URL('../../bin/meshgate', import.meta.url));

function run(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(BIN, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
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
  const child = spawn(BIN, ['serve', '--data-dir', dataDir, '--https-port', '0', '--log-level', 'warn', ...extra], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (/meshgate origin /.test(out)) resolve(out);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
  return { child, ready };
}

function stopped(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

test('meshgate serve prints its listening lines and the one-time admin password, answers over verified TLS, stops on SIGTERM', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const { child, ready } = serve(dataDir, ['--http-port', '0', '--cluster-name', 'cli-test']);
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
  const token = await request(`${base}/api/auth/token`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: 'admin', password, grant_type: 'password' }).toString(),
  });
  assert.equal(token.statusCode, 200);
  await token.body.dump();

  // A user added by the CLI while the gateway runs can log in at once.
  const added = await run(['user', 'add', 'bob', '--data-dir', dataDir, '--password-stdin'], {}, 'bob-password-1\n');
  assert.equal(added.code, 0, added.stderr);
  assert.match(added.stdout, /created user bob/);
  assert.ok(!added.stdout.includes('bob-password-1'), 'a password from stdin is never echoed');
  const bob = await request(`${base}/api/auth/token`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'username=bob&password=bob-password-1',
  });
  assert.equal(bob.statusCode, 200);
  await bob.body.dump();
  assert.equal(await stopped(child), 0, 'graceful stop exits 0');

  const second = serve(dataDir);
  const out2 = await second.ready;
  assert.ok(!out2.includes('bootstrap admin'), 'the password is printed only at first start');
  await stopped(second.child);
});

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

test('a port already in use stops start with one clear line, exit 1', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = serve(dataDir);
  const out = await first.ready;
  t.after(() => stopped(first.child));
  const port = /https:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1] as string;
  const otherDir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
  t.after(() => rmSync(otherDir, { recursive: true, force: true }));
  const second = await run(['serve', '--data-dir', otherDir, '--https-port', port, '--log-level', 'warn']);
  assert.equal(second.code, 1);
  assert.match(second.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
  assert.ok(!/at .*\.ts:\d+/.test(second.stderr), 'no stack trace');
});
