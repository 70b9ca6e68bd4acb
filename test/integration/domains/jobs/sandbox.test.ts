/**
 * The local job sandbox under attack: each row of test/fixtures/job-escapes.json is a job an `executor`
 * submits to reach what it must not (the keys, the database, other jobs, the gateway process) or to take
 * the gateway down. Whatever it tries, no secret appears in its output or result, nothing lands in the
 * data dir, and the gateway keeps serving.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { ADMIN_PASSWORD, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { executorToken, hostPid, jobProcesses, MARKER, submit, waitFor } from '../../../helpers/jobs.ts';

interface Escape {
  name: string;
  entrypoint: string;
  /** runtime_env.env_vars of the attempt (placeholders filled like the entrypoint's). */
  env?: Record<string, string>;
  status: string[];
  errorType?: string;
  timeoutSeconds?: number;
  printed?: string[];
  notPrinted?: string[];
  absent?: string[];
  result?: unknown;
}

const ESCAPES: Escape[] = JSON.parse(
  readFileSync(new URL('../../../fixtures/job-escapes.json', import.meta.url), 'utf8'),
);
const JOBS = '/api/cluster/jobs';
const MAX_LOG_BYTES = 1024 * 1024;
const VICTIM_SECRET = 'victim-output-7c1e5a';
const GATEWAY_ENV_SECRET = 'gateway-env-secret-94b2f0';

/** Distinctive bytes of every file under keys/ (whole files up to 64 bytes, else a window from the middle). */
function keyMaterial(dataDir: string): Buffer[] {
  const found: Buffer[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) {
        const bytes = readFileSync(path);
        found.push(bytes.length <= 64 ? bytes : bytes.subarray(bytes.length / 2 - 32, bytes.length / 2 + 32));
      }
    }
  };
  walk(join(dataDir, 'keys'));
  return found;
}

/**
 * Shell that writes into the current dir a stand-in for every tool the supervisor and the sandbox launcher
 * run: each reads the signing key and marks `escaped` in the data dir (possible only outside the sandbox),
 * then runs the real tool, so an attempt shows only in the mark and the key bytes.
 */
function plantTools(dataDir: string): string {
  const mark = `cat ${join(dataDir, 'keys', 'signing-key.jwk.json')} && : > ${join(dataDir, 'escaped')}`;
  const tools = 'mv rm mkfifo cat sh prlimit setsid bwrap setpriv';
  return (
    `for t in ${tools}; do printf '#!/bin/sh\\n${mark}\\nexec ` +
    `/usr/bin/$(basename "$0") "$@"\\n' > $t; chmod 755 $t; ` +
    `done; ` +
    `chmod 755 .`
  );
}

/** A preloadable library whose constructor tries the same as the planted tools, once per process tree. */
function evilLibrary(dataDir: string): string {
  const mark = `cat ${join(dataDir, 'keys', 'signing-key.jwk.json')} && : > ${join(dataDir, 'escaped')}`;
  return `#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
  unsetenv("LD_PRELOAD");
  unsetenv("LD_LIBRARY_PATH");
  system("${mark}");
}
`;
}

/** No secret in the job's log file nor in anything the API served of it. */
function assertNoSecret(secrets: readonly Buffer[], log: Buffer, answers: readonly string[]): void {
  for (const secret of secrets) {
    assert.equal(log.indexOf(secret), -1, `the job printed a secret: ${secret.toString('hex').slice(0, 16)}`);
    for (const answer of answers)
      assert.equal(answer.includes(secret.toString('latin1')), false, 'a secret was served');
  }
}

/** What the attempt expects: lines printed and not printed, paths that must not exist afterwards. */
function assertOutcome(attempt: Escape, served: string, inDataDir: (path: string) => string): void {
  for (const text of attempt.printed ?? [])
    assert.ok(served.includes(text), `expected "${text}" in:\n${served.slice(0, 2000)}`);
  for (const text of attempt.notPrinted ?? []) assert.equal(served.includes(text), false, served.slice(0, 2000));
  for (const path of attempt.absent ?? []) assert.equal(existsSync(inDataDir(path)), false, path);
}

async function ping(gw: TestGateway): Promise<void> {
  assert.equal((await gw.request('GET', '/api/ping')).status, 200, 'the gateway keeps serving');
}

test('escape attempts from a local job fail, and the gateway keeps serving after each', async (t) => {
  process.env.MESHGATE_TEST_ESCAPE_SECRET = GATEWAY_ENV_SECRET;
  t.after(() => delete process.env.MESHGATE_TEST_ESCAPE_SECRET);
  const limits = { processes: 64, cpuSeconds: 30 };
  const gw = await startTestGateway(t, { jobs: { local: { maxLogBytes: MAX_LOG_BYTES, stopGraceMs: 200, limits } } });
  const { token } = await executorToken(gw, 'mallory');
  const victim = await gw.request('POST', `${JOBS}/run`, {
    token: await gw.adminToken(),
    json: { entrypoint: `echo ${VICTIM_SECRET}` },
  });
  assert.equal(victim.json.status, 'SUCCEEDED');
  // Another job of the attacker's leaves planted tools and a library in its work dir, for the attempts that
  // point PATH or LD_PRELOAD there.
  const planter = await gw.request('POST', `${JOBS}/run`, {
    token,
    json: {
      entrypoint:
        `${plantTools(gw.dataDir)}; printf '%s' "$EVIL_C" > evil.c && cc -shared -fPIC -o evil.so ` +
        `evil.c && chmod 755 evil.so`,
      runtime_env: { env_vars: { EVIL_C: evilLibrary(gw.dataDir) } },
    },
  });
  assert.equal(planter.json.status, 'SUCCEEDED', planter.text);
  const planted = join(gw.dataDir, 'jobs', planter.json.id, 'work');
  const secrets = [
    ...keyMaterial(gw.dataDir),
    Buffer.from('SQLite format 3'),
    Buffer.from(VICTIM_SECRET),
    Buffer.from(GATEWAY_ENV_SECRET),
    Buffer.from(ADMIN_PASSWORD),
  ];
  for (const attempt of ESCAPES) {
    await t.test(attempt.name, async () => {
      const fill = (text: string) =>
        text
          .replaceAll('{plant}', plantTools(gw.dataDir))
          .replaceAll('{planted}', planted)
          .replaceAll('{evil_c}', evilLibrary(gw.dataDir))
          .replaceAll('{data}', gw.dataDir)
          .replaceAll('{gateway}', String(process.pid))
          .replaceAll('{victim}', victim.json.id);
      const env_vars = Object.fromEntries(
        Object.entries(attempt.env ?? {}).map(([name, value]) => [name, fill(value)]),
      );
      const json = {
        entrypoint: fill(attempt.entrypoint),
        timeout_seconds: attempt.timeoutSeconds ?? 60,
        runtime_env: { env_vars },
      };
      const run = await gw.request('POST', `${JOBS}/run`, { token, json });
      assert.equal(run.status, 200, run.text);
      assert.ok(attempt.status.includes(run.json.status), `${run.json.status} ${run.json.error_type}`);
      if (attempt.errorType) assert.equal(run.json.error_type, attempt.errorType);
      if ('result' in attempt) assert.deepEqual(run.json.result, attempt.result);
      const log = readFileSync(join(gw.dataDir, 'jobs', run.json.id, 'output.log'));
      assert.ok(log.length <= MAX_LOG_BYTES + 1, `the log stays within the cap (${log.length} bytes)`);
      const served = (await gw.request('GET', `${JOBS}/${run.json.id}/logs`, { token })).json.logs as string;
      const result = await gw.request('GET', `${JOBS}/${run.json.id}/result`, { token });
      assertNoSecret(secrets, log, [served, result.text]);
      assertOutcome(attempt, served, (path) => join(gw.dataDir, path.replace('{self}', run.json.id)));
      for (let i = 0; i < 100 && jobProcesses(run.json.id).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(jobProcesses(run.json.id), [], 'nothing of the job outlives it');
      await ping(gw);
    });
  }
});

test('a token the job could forge with any key it can reach (none, the public JWKS, its own) is refused', async (t) => {
  const gw = await startTestGateway(t);
  const jwks = (await gw.request('GET', '/api/auth/jwks')).json;
  const kid = jwks.keys[0].kid as string;
  const claims = {
    sub: 'forged',
    preferred_username: 'admin',
    roles: ['admin'],
    aud: 'platform',
    iss: `${gw.url}/api/auth`,
  };
  const own = await generateKeyPair('ES256');
  const unsignedHeader = Buffer.from(JSON.stringify({ alg: 'none', kid })).toString('base64url');
  const unsigned = `${unsignedHeader}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
  const forged = [
    unsigned,
    await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(own.privateKey),
    await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(Buffer.from(JSON.stringify(jwks.keys[0]))),
    await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', jwk: await exportJWK(own.publicKey) })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(own.privateKey),
  ];
  for (const token of forged) {
    const res = await gw.request('GET', `${JOBS}/`, { token });
    assert.equal(res.status, 401, res.text);
  }
  await ping(gw);
});

test(
  'job processes run as the dedicated uid, cancel kills daemons that ' +
    'left the session, and a restart keeps the job',
  async (t) => {
    const gw = await startTestGateway(t, { jobs: { local: { stopGraceMs: 200 } } });
    const token = await gw.adminToken();
    const entrypoint = `setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' & sleep 300`;
    const job = await submit(gw, token, { entrypoint });
    const work = join(gw.dataDir, 'jobs', job.json.id, 'work');
    await waitFor(
      gw,
      token,
      job.json.id,
      () => existsSync(join(work, 'daemon.pid')) && readFileSync(join(work, 'daemon.pid'), 'utf8').endsWith('\n'),
    );
    const daemon = hostPid(job.json.id, Number(readFileSync(join(work, 'daemon.pid'), 'utf8')));
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${daemon}/status`, 'utf8'))?.[1]);
    assert.notEqual(uid, 0, 'never root');
    if (process.geteuid?.() === 0) assert.equal(uid, 65534, 'the configured jobs.local.sandbox.uid');
    assert.equal(statSync(work).uid, uid, 'the work dir belongs to the job uid');
    assert.equal(
      statSync(join(gw.dataDir, 'jobs', job.json.id)).mode & 0o777,
      0o700,
      'the job dir stays the gateway’s',
    );
    // --die-with-parent ties the sandbox to its supervisor, not to the gateway: a restart leaves it running.
    await gw.restart();
    assert.equal((await waitFor(gw, token, job.json.id, (b) => b.status === 'RUNNING')).status, 'RUNNING');
    assert.ok(jobProcesses(job.json.id).includes(daemon), 'the job survived the restart');
    await gw.request('POST', `${JOBS}/${job.json.id}/cancel`, { token: await gw.adminToken() });
    for (let i = 0; i < 100 && jobProcesses(job.json.id).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(jobProcesses(job.json.id), [], 'the setsid daemon died with the sandbox');
  },
);

test(
  'no sandbox can be made (bwrap missing): local jobs are 503 ' + 'job_sandbox_unavailable, nothing is recorded',
  async (t) => {
    const gw = await startTestGateway(t, { jobs: { local: { sandbox: { bwrapPath: '/nonexistent/bwrap' } } } });
    const token = await gw.adminToken();
    for (const path of ['submit', 'run']) {
      const res = await gw.request('POST', `${JOBS}/${path}`, { token, json: { entrypoint: 'true' } });
      assert.deepEqual([res.status, res.json.detail.reason], [503, 'job_sandbox_unavailable'], res.text);
    }
    assert.deepEqual((await gw.request('GET', `${JOBS}/`, { token })).json, []);
    assert.ok(gw.logs.some((line) => line.includes('the job sandbox is unavailable')));
    await ping(gw);
  },
);

test(
  'sandbox mode "none" is an explicit, logged opt-out; the gateway still ' + 'never follows a job-planted symlink',
  async (t) => {
    const gw = await startTestGateway(t, { jobs: { local: { sandbox: { mode: 'none' } } } });
    const token = await gw.adminToken();
    assert.ok(gw.logs.some((line) => line.includes('UNSANDBOXED')));
    const key = join(gw.dataDir, 'keys', 'signing-key.jwk.json');
    const entrypoint =
      `echo '${MARKER}{"mine":1}'; ln ` + `-sf ${key} ../output.log.new && mv -f ../output.log.new ` + `../output.log`;
    const run = await gw.request('POST', `${JOBS}/run`, { token, json: { entrypoint } });
    assert.equal(run.json.status, 'SUCCEEDED', run.text);
    const logs = await gw.request('GET', `${JOBS}/${run.json.id}/logs`, { token });
    // O_NOFOLLOW: the gateway treats the log as gone rather than read the key through the link.
    assert.deepEqual([logs.status, logs.json.detail?.reason], [410, 'job_logs_expired'], logs.text);
    assert.equal(logs.text.includes(JSON.parse(readFileSync(key, 'utf8')).d), false);
    await ping(gw);
  },
);

test(
  'env_vars reach only the sandboxed entrypoint: the supervisor and ' + 'bwrap keep their fixed environment',
  async (t) => {
    const gw = await startTestGateway(t);
    const { token } = await executorToken(gw, 'mallory');
    const value = `it's "quoted"\n$(touch pwned) \`x\` \\ end`;
    const env_vars = { SECRET_VALUE: value, PATH: '/opt/job/bin:/usr/bin:/bin', LD_LIBRARY_PATH: '/opt/job/lib' };
    const entrypoint = `printf '%s|%s|%s' "$SECRET_VALUE" "$PATH" "$LD_LIBRARY_PATH" > seen; sleep 30`;
    const job = await submit(gw, token, { entrypoint, runtime_env: { env_vars } });
    const work = join(gw.dataDir, 'jobs', job.json.id, 'work');
    await waitFor(
      gw,
      token,
      job.json.id,
      () => existsSync(join(work, 'seen')) && readFileSync(join(work, 'seen'), 'utf8').endsWith('/opt/job/lib'),
    );
    assert.equal(readFileSync(join(work, 'seen'), 'utf8'), `${value}|${env_vars.PATH}|${env_vars.LD_LIBRARY_PATH}`);
    assert.equal(existsSync(join(work, 'pwned')), false, 'a value is never evaluated');
    assert.equal(
      existsSync(join(gw.dataDir, 'jobs', job.json.id, 'env')),
      false,
      'the environment file is gone once held open',
    );
    const outside = jobProcesses(job.json.id).filter((pid) => statSync(`/proc/${pid}`).uid === process.geteuid?.());
    assert.ok(outside.length >= 2, 'the supervisor and bwrap are found');
    for (const pid of outside) {
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
      assert.ok(environ.includes('PATH=/usr/bin:/bin'), environ.join(' '));
      assert.equal(
        environ.some((entry) => /^(SECRET_VALUE|LD_LIBRARY_PATH|HOME)=/.test(entry)),
        false,
        environ.join(' '),
      );
      assert.equal(
        readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('quoted'),
        false,
        'no value on a command line',
      );
    }
    await gw.request('POST', `${JOBS}/${job.json.id}/cancel`, { token });
    await waitFor(gw, token, job.json.id);
  },
);

test('env_vars names that are not portable shell identifiers are refused with 422; nothing is recorded', async (t) => {
  const gw = await startTestGateway(t);
  const { token } = await executorToken(gw, 'mallory');
  for (const env_vars of [
    { '1ABC': 'x' },
    { 'A-B': 'x' },
    { 'A=B': 'x' },
    { '': 'x' },
    { 'A B': 'x' },
    { 'BASH_FUNC_f%%': '() { id; }' },
    { OK: 'a\0b' },
  ]) {
    const res = await gw.request('POST', `${JOBS}/submit`, {
      token,
      json: { entrypoint: 'true', runtime_env: { env_vars } },
    });
    assert.equal(res.status, 422, `${JSON.stringify(env_vars)}: ${res.text}`);
  }
  assert.deepEqual((await gw.request('GET', `${JOBS}/`, { token })).json, []);
});

test('a supervisor killed outright takes its sandbox with it: no bwrap or job process is left', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const entrypoint = `setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' & sleep 300`;
  const job = await submit(gw, token, { entrypoint });
  const work = join(gw.dataDir, 'jobs', job.json.id, 'work');
  await waitFor(
    gw,
    token,
    job.json.id,
    () => existsSync(join(work, 'daemon.pid')) && readFileSync(join(work, 'daemon.pid'), 'utf8').endsWith('\n'),
  );
  const [supervisor] = readFileSync(join(gw.dataDir, 'jobs', job.json.id, 'pid'), 'utf8')
    .trim()
    .split(' ');
  assert.ok(jobProcesses(job.json.id).length >= 3, 'the supervisor, bwrap and the job run');
  process.kill(-Number(supervisor), 'SIGKILL');
  for (let i = 0; i < 250 && jobProcesses(job.json.id).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(jobProcesses(job.json.id), [], 'the sandbox saw its stop FIFO close and killed everything in it');
  assert.equal((await waitFor(gw, token, job.json.id)).status, 'FAILED');
});

test('start is refused when a sandbox mount would show the data dir or the KEK dir to jobs', async (t) => {
  // The test gateway's data dir lies under the temp dir.
  const underTmp = { jobs: { local: { sandbox: { readOnlyPaths: [tmpdir()] } } } };
  await assert.rejects(startTestGateway(t, underTmp), /dataDir .* would be visible to jobs through the sandbox mount/);
  const kekDir = mkdtempSync(join(tmpdir(), 'meshgate-kek-'));
  t.after(() => rmSync(kekDir, { recursive: true, force: true }));
  const kekMounted = { secrets: { kekDir }, jobs: { local: { sandbox: { readOnlyPaths: [kekDir] } } } };
  await assert.rejects(startTestGateway(t, kekMounted), /secrets\.kekDir .* would be visible to jobs/);
  const inside = { secrets: { kekDir }, jobs: { local: { sandbox: { readOnlyPaths: [join(kekDir, 'v1')] } } } };
  await assert.rejects(
    startTestGateway(t, inside),
    /secrets\.kekDir .* would be visible to jobs/,
    'a mount of part of it too',
  );
});
