/**
 * The local job sandbox under attack: each row of test/fixtures/job-escapes.json is a job an `executor`
 * submits to reach what it must not (the keys, the database, other jobs, the gateway process) or to take
 * the gateway down. Whatever it tries, no secret appears in its output or result, nothing lands in the
 * data dir, and the gateway keeps serving.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { ADMIN_PASSWORD, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { executorToken, hostPid, jobProcesses, MARKER, submit, waitFor } from '../helpers/jobs.ts';

interface Escape {
  name: string;
  entrypoint: string;
  status: string[];
  errorType?: string;
  timeoutSeconds?: number;
  printed?: string[];
  notPrinted?: string[];
  absent?: string[];
  result?: unknown;
}

const ESCAPES: Escape[] = JSON.parse(readFileSync(new URL('../fixtures/job-escapes.json', import.meta.url), 'utf8'));
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

/** No secret in the job's log file nor in anything the API served of it. */
function assertNoSecret(secrets: readonly Buffer[], log: Buffer, answers: readonly string[]): void {
  for (const secret of secrets) {
    assert.equal(log.indexOf(secret), -1, `the job printed a secret: ${secret.toString('hex').slice(0, 16)}`);
    for (const answer of answers) assert.equal(answer.includes(secret.toString('latin1')), false, 'a secret was served');
  }
}

/** What the attempt expects: lines printed and not printed, paths that must not exist afterwards. */
function assertOutcome(attempt: Escape, served: string, inDataDir: (path: string) => string): void {
  for (const text of attempt.printed ?? []) assert.ok(served.includes(text), `expected "${text}" in:\n${served.slice(0, 2000)}`);
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
  const victim = await gw.request('POST', `${JOBS}/run`, { token: await gw.adminToken(), json: { entrypoint: `echo ${VICTIM_SECRET}` } });
  assert.equal(victim.json.status, 'SUCCEEDED');
  const secrets = [
    ...keyMaterial(gw.dataDir),
    Buffer.from('SQLite format 3'),
    Buffer.from(VICTIM_SECRET),
    Buffer.from(GATEWAY_ENV_SECRET),
    Buffer.from(ADMIN_PASSWORD),
  ];
  for (const attempt of ESCAPES) {
    await t.test(attempt.name, async () => {
      const fill = (text: string) => text.replaceAll('{data}', gw.dataDir).replaceAll('{gateway}', String(process.pid)).replaceAll('{victim}', victim.json.id);
      const json = { entrypoint: fill(attempt.entrypoint), timeout_seconds: attempt.timeoutSeconds ?? 60 };
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
  const claims = { sub: 'forged', preferred_username: 'admin', roles: ['admin'], aud: 'platform', iss: `${gw.url}/api/auth` };
  const own = await generateKeyPair('ES256');
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', kid })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
  const forged = [
    unsigned,
    await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid }).setIssuedAt().setExpirationTime('1h').sign(own.privateKey),
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

test('job processes run as the dedicated uid, cancel kills daemons that left the session, and a restart keeps the job', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { stopGraceMs: 200 } } });
  const token = await gw.adminToken();
  const entrypoint = `setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' & sleep 300`;
  const job = await submit(gw, token, { entrypoint });
  const work = join(gw.dataDir, 'jobs', job.json.id, 'work');
  await waitFor(gw, token, job.json.id, () => existsSync(join(work, 'daemon.pid')) && readFileSync(join(work, 'daemon.pid'), 'utf8').endsWith('\n'));
  const daemon = hostPid(job.json.id, Number(readFileSync(join(work, 'daemon.pid'), 'utf8')));
  const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${daemon}/status`, 'utf8'))?.[1]);
  assert.notEqual(uid, 0, 'never root');
  if (process.geteuid?.() === 0) assert.equal(uid, 65534, 'the configured jobs.local.sandbox.uid');
  assert.equal(statSync(work).uid, uid, 'the work dir belongs to the job uid');
  assert.equal(statSync(join(gw.dataDir, 'jobs', job.json.id)).mode & 0o777, 0o700, 'the job dir stays the gateway’s');
  // --die-with-parent ties the sandbox to its supervisor, not to the gateway: a restart leaves it running.
  await gw.restart();
  assert.equal((await waitFor(gw, token, job.json.id, (b) => b.status === 'RUNNING')).status, 'RUNNING');
  assert.ok(jobProcesses(job.json.id).includes(daemon), 'the job survived the restart');
  await gw.request('POST', `${JOBS}/${job.json.id}/cancel`, { token: await gw.adminToken() });
  for (let i = 0; i < 100 && jobProcesses(job.json.id).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(jobProcesses(job.json.id), [], 'the setsid daemon died with the sandbox');
});

test('no sandbox can be made (bwrap missing): local jobs are 503 job_sandbox_unavailable, nothing is recorded', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { sandbox: { bwrapPath: '/nonexistent/bwrap' } } } });
  const token = await gw.adminToken();
  for (const path of ['submit', 'run']) {
    const res = await gw.request('POST', `${JOBS}/${path}`, { token, json: { entrypoint: 'true' } });
    assert.deepEqual([res.status, res.json.detail.reason], [503, 'job_sandbox_unavailable'], res.text);
  }
  assert.deepEqual((await gw.request('GET', `${JOBS}/`, { token })).json, []);
  assert.ok(gw.logs.some((line) => line.includes('the job sandbox is unavailable')));
  await ping(gw);
});

test('sandbox mode "none" is an explicit, logged opt-out; the gateway still never follows a job-planted symlink', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { sandbox: { mode: 'none' } } } });
  const token = await gw.adminToken();
  assert.ok(gw.logs.some((line) => line.includes('UNSANDBOXED')));
  const key = join(gw.dataDir, 'keys', 'signing-key.jwk.json');
  const entrypoint = `echo '${MARKER}{"mine":1}'; ln -sf ${key} ../output.log.new && mv -f ../output.log.new ../output.log`;
  const run = await gw.request('POST', `${JOBS}/run`, { token, json: { entrypoint } });
  assert.equal(run.json.status, 'SUCCEEDED', run.text);
  const logs = await gw.request('GET', `${JOBS}/${run.json.id}/logs`, { token });
  // O_NOFOLLOW: the gateway treats the log as gone rather than read the key through the link.
  assert.deepEqual([logs.status, logs.json.detail?.reason], [410, 'job_logs_expired'], logs.text);
  assert.equal(logs.text.includes(JSON.parse(readFileSync(key, 'utf8')).d), false);
  await ping(gw);
});
