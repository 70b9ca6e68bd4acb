import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { MARKER, submit, waitFor } from '../../../helpers/jobs.ts';
import { waitFor as waitUntil } from '../../../helpers/wait.ts';

const JOBS = '/api/cluster/jobs';
const status = async (gw: TestGateway, id: string) =>
  (await gw.request('GET', `${JOBS}/${id}/status`, { token: await gw.adminToken() })).json;
const groupOf = (gw: TestGateway, id: string) =>
  -Number(
    readFileSync(join(gw.dataDir, 'jobs', id, 'pid'), 'utf8')
      .trim()
      .split(' ')[0],
  );
const killGroup = (gw: TestGateway, id: string) => process.kill(groupOf(gw, id), 'SIGKILL');
/** Signal 0 probes without sending (kill(2)): ESRCH once every process of the job's group has exited. */
const groupAlive = (gw: TestGateway, id: string) => {
  try {
    return process.kill(groupOf(gw, id), 0);
  } catch {
    return false;
  }
};

test('restart: a job still running is re-attached and its end recorded', async (t) => {
  const gw = await startTestGateway(t);
  const id = (await submit(gw, await gw.adminToken(), { entrypoint: `sleep 1.5; echo '${MARKER}{"survived":true}'` }))
    .json.id;
  await waitFor(gw, await gw.adminToken(), id, (b) => b.status === 'RUNNING');
  await gw.restart();
  assert.equal((await status(gw, id)).status, 'RUNNING');
  const done = await waitFor(gw, await gw.adminToken(), id);
  assert.equal(done.status, 'SUCCEEDED');
  const result = await gw.request('GET', `${JOBS}/${id}/result`, { token: await gw.adminToken() });
  assert.equal(result.json.survived, true);
});

test('restart: a job that finished while the gateway was down is recorded from its exit status', async (t) => {
  const gw = await startTestGateway(t);
  const ok = (await submit(gw, await gw.adminToken(), { entrypoint: 'sleep 0.5' })).json.id;
  const bad = (await submit(gw, await gw.adminToken(), { entrypoint: 'sleep 0.5; exit 7' })).json.id;
  await waitFor(gw, await gw.adminToken(), bad, (b) => b.status === 'RUNNING');
  await gw.stop({ jobsOutlive: true });
  const ended = () => !groupAlive(gw, ok) && !groupAlive(gw, bad);
  await waitUntil(ended, { what: 'both jobs ending while the gateway is down' });
  const restartedAt = Date.now();
  await gw.start();
  const [okNow, badNow] = [await status(gw, ok), await status(gw, bad)];
  assert.equal(okNow.status, 'SUCCEEDED');
  assert.deepEqual([badNow.status, badNow.error_type], ['FAILED', 'entrypoint_failed']);
  assert.match(badNow.error_message, /exit code 7/);
  assert.ok(Date.parse(okNow.ended_at) < restartedAt, 'ended_at is when it ended, not when it was noticed');
});

test('restart: a job whose process vanished without an exit status is FAILED runtime_lost', async (t) => {
  const gw = await startTestGateway(t);
  const id = (await submit(gw, await gw.adminToken(), { entrypoint: 'sleep 30' })).json.id;
  await waitFor(gw, await gw.adminToken(), id, (b) => b.status === 'RUNNING');
  await gw.stop({ jobsOutlive: true });
  killGroup(gw, id);
  await gw.start();
  const now = await waitFor(gw, await gw.adminToken(), id, undefined, 5000);
  assert.deepEqual([now.status, now.error_type], ['FAILED', 'runtime_lost']);
  assert.ok(now.ended_at);
});

test('restart: queued jobs are queued again and run', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { maxConcurrent: 1 } } });
  const token = await gw.adminToken();
  const blocker = (await submit(gw, token, { entrypoint: 'sleep 1' })).json.id;
  const queued = (
    await submit(gw, token, {
      entrypoint: `echo '${MARKER}{"queued":true}'`,
      runtime_env: { env_vars: { KEPT: 'yes' } },
    })
  ).json.id;
  assert.equal((await status(gw, queued)).status, 'PENDING');
  await gw.restart();
  assert.equal((await status(gw, queued)).status, 'PENDING');
  assert.equal((await waitFor(gw, await gw.adminToken(), blocker)).status, 'SUCCEEDED');
  assert.equal((await waitFor(gw, await gw.adminToken(), queued)).status, 'SUCCEEDED');
  const result = await gw.request('GET', `${JOBS}/${queued}/result`, { token: await gw.adminToken() });
  assert.equal(result.json.queued, true);
});

test(
  'restart with another runtime configured: its active jobs are FAILED ' + 'runtime_lost, never left RUNNING',
  async (t) => {
    const gw = await startTestGateway(t);
    const id = (await submit(gw, await gw.adminToken(), { entrypoint: 'sleep 30' })).json.id;
    await waitFor(gw, await gw.adminToken(), id, (b) => b.status === 'RUNNING');
    await gw.stop({ jobsOutlive: true });
    killGroup(gw, id);
    // Nothing listens on the discard port: the switch must not depend on reaching the new runtime.
    Object.assign(gw.overrides, { jobs: { runtime: 'ray', ray: { dashboardUrl: 'http://127.0.0.1:9' } } });
    await gw.start();
    const now = await status(gw, id);
    assert.deepEqual([now.status, now.error_type], ['FAILED', 'runtime_lost']);
  },
);
