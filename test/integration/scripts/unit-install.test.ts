/**
 * The executable where the shipped unit puts it, with the unit's environment (test/helpers/artifact.ts): nothing but
 * the gateway's own files land in the data dir (the executable's unpacked files go to CacheDirectory=, the service
 * user's home too), and `meshgate restore` run as the docs say (as the service user, outside the unit) into an
 * emptied data dir works.
 * And as an unprivileged user whose home is not writable and with no cache directory set, `--version` answers and
 * writes nothing, and a command that needs the unpacked files falls back to a folder of that user's in the temp dir.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { unitEnvironment, unitLaunch } from '../../helpers/artifact.ts';

const run = promisify(execFile);
const ADMIN_PASSWORD = 'unit-install-admin-pw';
const NOBODY = '65534';

/** `serve` as the unit starts it, on the unit's own data dir; resolves once it listens, with a stop function. */
async function serveAsUnit(): Promise<{ stop(): Promise<number | null>; output(): string }> {
  const launch = unitLaunch(['serve', '--https-port', '0'], { PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD });
  const child = spawn(launch.file, launch.args, { env: launch.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (/^meshgate origin /m.test(out)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
  return {
    output: () => out,
    stop: () =>
      new Promise((resolve) => {
        child.once('close', resolve);
        child.kill('SIGTERM');
      }),
  };
}

test('the unit keeps the unpacked files out of the data dir, so a restore as the service into it works', async (t) => {
  const env = unitEnvironment();
  const dataDir = env.PLATFORM_DATA_DIR as string;
  const backups = mkdtempSync(join(tmpdir(), 'meshgate-unit-backups-'));
  t.after(() => rmSync(backups, { recursive: true, force: true }));

  const served = await serveAsUnit();
  const backup = join(backups, 'one');
  const launch = unitLaunch(['backup', backup]);
  await run(launch.file, launch.args, { env: launch.env });
  assert.equal(await served.stop(), 0, served.output());
  assert.ok(!readdirSync(dataDir).includes('.cache'), `nothing unpacked into the data dir: ${readdirSync(dataDir)}`);
  const cache = env.CACHE_DIRECTORY as string;
  assert.ok(
    readdirSync(cache).some((name) => /^\d+\.\d+\.\d+-[0-9a-f]{16}$/.test(name)),
    'unpacked into the cache',
  );

  for (const name of readdirSync(dataDir)) rmSync(join(dataDir, name), { recursive: true, force: true });
  // As docs/operating.md restores: `sudo -u meshgate meshgate restore …`, outside the unit, so with the service
  // user's home and none of the unit's variables.
  const restore = unitLaunch(['restore', backup, '--data-dir', dataDir]);
  const asSudo = { PATH: '/usr/bin:/bin', HOME: env.HOME as string };
  const restored = await run(restore.file, restore.args, { env: asSudo });
  assert.match(restored.stdout + restored.stderr, /restored/i);
  assert.ok(readdirSync(dataDir).includes('meshgate.db'), 'the database is back');
  assert.ok(!readdirSync(dataDir).includes('.cache'));
});

test('a user with an unwritable home: --version writes nothing; other commands use the temp dir', async (t) => {
  // A folder the unprivileged user may enter and write, the executable copied in readable to it (the install root
  // is root's alone), and a home it cannot write.
  const scratch = mkdtempSync(join(tmpdir(), 'meshgate-unit-nobody-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  chmodSync(scratch, 0o1777);
  const exe = join(scratch, 'meshgate');
  copyFileSync(unitLaunch([]).file, exe);
  chmodSync(exe, 0o755);
  const home = join(scratch, 'home');
  mkdirSync(home, { mode: 0o755 });
  const temp = join(scratch, 'tmp');
  mkdirSync(temp);
  chmodSync(temp, 0o1777);
  const env = { PATH: '/usr/bin:/bin', HOME: home, TMPDIR: temp };
  const asNobody = (args: string[]) =>
    run('setpriv', ['--reuid', NOBODY, '--regid', NOBODY, '--clear-groups', exe, ...args], { env });

  const version = await asNobody(['--version']);
  assert.match(version.stdout, /^meshgate \d+\.\d+\.\d+ \(commit /);
  assert.deepEqual(readdirSync(temp), [], '--version unpacked nothing');
  assert.deepEqual(readdirSync(home), []);

  const help = await asNobody(['serve', '--help']);
  assert.match(help.stdout, /PLATFORM_DATA_DIR/);
  assert.deepEqual(readdirSync(temp), [`meshgate-cache-${NOBODY}`], 'unpacked into a folder of its own');
  assert.deepEqual(readdirSync(home), [], 'nothing written into the home');
});
