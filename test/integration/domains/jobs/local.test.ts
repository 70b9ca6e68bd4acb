import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { alive, hostPid, jobProcesses, MARKER, submit, waitFor } from '../../../helpers/jobs.ts';
import { waitFor as waitUntil } from '../../../helpers/wait.ts';

const JOBS = '/api/cluster/jobs';

test('concurrency limit: queued jobs stay PENDING and start in FIFO order', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { maxConcurrent: 2 } } });
  const token = await gw.adminToken();
  // The two slot jobs wait for a file the test writes into their work dirs, so nothing ends before it is observed.
  const held = `while [ ! -e release ]; do sleep 0.02; done; echo '${MARKER}{"held":true}'`;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const entrypoint = i < 2 ? held : `echo '${MARKER}{"i":${i}}'`;
    ids.push((await submit(gw, token, { entrypoint })).json.id);
  }
  const [a, b, ...queued] = ids as [string, string, ...string[]];
  await waitFor(gw, token, a, (s) => s.status === 'RUNNING');
  await waitFor(gw, token, b, (s) => s.status === 'RUNNING');
  const status = async (id: string) => (await gw.request('GET', `${JOBS}/${id}/status`, { token })).json.status;
  assert.deepEqual(await Promise.all(queued.map(status)), ['PENDING', 'PENDING', 'PENDING']);
  const release = (id: string) => writeFileSync(join(gw.dataDir, 'jobs', id, 'work', 'release'), '');
  release(a);
  release(b);
  const done = await Promise.all(ids.map((id) => waitFor(gw, token, id)));
  assert.ok(done.every((d) => d.status === 'SUCCEEDED'));
  const starts = done.map((d) => Date.parse(d.started_at)) as [number, number, number, number, number];
  const queuedStarts = starts.slice(2);
  assert.ok(Math.max(starts[0], starts[1]) <= starts[2], 'both slot jobs started before the queue moved');
  assert.deepEqual(
    [...queuedStarts].sort((x, y) => x - y),
    queuedStarts,
    'queued jobs start in FIFO order',
  );
  const firstEnd = Math.min(Date.parse(done[0].ended_at), Date.parse(done[1].ended_at));
  assert.ok((starts[2] as number) >= firstEnd - 5, 'the third starts only when a slot frees');
});

test('cancelling a queued job stops it before it ever runs', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { maxConcurrent: 1 } } });
  const token = await gw.adminToken();
  const blocker = await submit(gw, token, { entrypoint: 'sleep 30' });
  const queued = await submit(gw, token, { entrypoint: 'touch ran' });
  const cancel = await gw.request('POST', `${JOBS}/${queued.json.id}/cancel`, { token });
  assert.deepEqual([cancel.json.status, cancel.json.started_at], ['STOPPED', null]);
  await gw.request('POST', `${JOBS}/${blocker.json.id}/cancel`, { token });
  const next = await gw.request('POST', `${JOBS}/run`, { token, json: { entrypoint: 'echo next' } });
  assert.equal(next.json.status, 'SUCCEEDED', 'the slot was given back');
  assert.equal(existsSync(join(gw.dataDir, 'jobs', queued.json.id, 'work', 'ran')), false);
  assert.equal((await gw.request('GET', `${JOBS}/${queued.json.id}/logs`, { token })).json.logs, '');
});

test('each job has its own working dir and process group; cancel kills the whole group', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { stopGraceMs: 300 } } });
  const token = await gw.adminToken();
  const res = await submit(gw, token, { entrypoint: 'pwd; sleep 60 & echo $! > child.pid; wait' });
  const work = join(gw.dataDir, 'jobs', res.json.id, 'work');
  // The shell creates child.pid before it writes the pid: wait for the whole line.
  const written = () =>
    existsSync(join(work, 'child.pid')) && readFileSync(join(work, 'child.pid'), 'utf8').endsWith('\n');
  await waitFor(gw, token, res.json.id, written);
  const child = hostPid(res.json.id, Number(readFileSync(join(work, 'child.pid'), 'utf8')));
  assert.ok(alive(child));
  await gw.request('POST', `${JOBS}/${res.json.id}/cancel`, { token });
  for (let i = 0; i < 50 && alive(child); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(alive(child), false, 'the background child died with its group');
  const logs = await gw.request('GET', `${JOBS}/${res.json.id}/logs`, { token });
  assert.equal(logs.json.logs.split('\n')[0], work);
});

test('a job ignoring SIGTERM is SIGKILLed after the grace; jobs finishing leave no stragglers', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { stopGraceMs: 400 } } });
  const token = await gw.adminToken();
  // The job survives SIGTERM: its handler notes the signal and the loop goes on (the sleep it kills is restarted).
  const entrypoint = `trap "echo > termed" TERM; echo $$ > me.pid; while :; do sleep 0.05; done`;
  const stubborn = await submit(gw, token, { entrypoint });
  const work = join(gw.dataDir, 'jobs', stubborn.json.id, 'work');
  await waitFor(gw, token, stubborn.json.id, () => existsSync(join(work, 'me.pid')));
  const pid = hostPid(stubborn.json.id, Number(readFileSync(join(work, 'me.pid'), 'utf8')));
  await gw.request('POST', `${JOBS}/${stubborn.json.id}/cancel`, { token });
  await waitUntil(() => existsSync(join(work, 'termed')), { what: 'the SIGTERM reaching the job' });
  assert.ok(alive(pid), 'SIGTERM did not end it');
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(alive(pid), false, 'SIGKILL after the grace');
  const leaver = await gw.request('POST', `${JOBS}/run`, {
    token,
    json: { entrypoint: 'sleep 60 & echo $! > bg.pid' },
  });
  assert.equal(leaver.json.status, 'SUCCEEDED');
  for (let i = 0; i < 50 && jobProcesses(leaver.json.id).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(jobProcesses(leaver.json.id), [], 'the background sleep died with the sandbox');
});

test('the job environment is clean: nothing of the gateway’s own environment leaks in', async (t) => {
  process.env.MESHGATE_TEST_GATEWAY_SECRET = 'must-not-leak';
  t.after(() => delete process.env.MESHGATE_TEST_GATEWAY_SECRET);
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const res = await gw.request('POST', `${JOBS}/run`, {
    token,
    json: { entrypoint: 'env', runtime_env: { env_vars: { MINE: 'yes' } } },
  });
  const logs = (await gw.request('GET', `${JOBS}/${res.json.id}/logs`, { token })).json.logs as string;
  const names = logs
    .trim()
    .split('\n')
    .map((l) => l.split('=')[0])
    .sort();
  const expected = [
    'HOME',
    'LANG',
    'MINE',
    'PATH',
    'PWD',
    'PLATFORM_API_URL',
    'PLATFORM_JOB_ID',
    'PLATFORM_USER_ATTRS',
    'PLATFORM_USER_ID',
  ];
  expected.push('KAMIWAZA_API_URL', 'KAMIWAZA_USER_ATTRS', 'KAMIWAZA_USER_ID');
  assert.deepEqual(names, expected.sort());
  assert.ok(!logs.includes('must-not-leak'));
});

test('huge logs: the marker after 20 MB is found; /logs returns the tail after a notice', async (t) => {
  const gw = await startTestGateway(t, { jobs: { logsResponseMaxBytes: 1024 * 1024 } });
  const token = await gw.adminToken();
  const entrypoint = `head -c 20000000 /dev/zero | tr '\\0' 'x' | fold -w 1000; echo; echo '${MARKER}{"big":true}'`;
  const run = await gw.request('POST', `${JOBS}/run`, { token, json: { entrypoint } });
  assert.equal(run.json.status, 'SUCCEEDED', run.text);
  assert.deepEqual(run.json.result, { big: true });
  const result = await gw.request('GET', `${JOBS}/${run.json.id}/result`, { token });
  assert.equal(result.json.big, true);
  const logs = await gw.request('GET', `${JOBS}/${run.json.id}/logs`, { token });
  assert.match(logs.json.logs, /^\[meshgate: \d+ earlier bytes omitted\]\n/);
  assert.ok(logs.json.logs.length < 1024 * 1024 + 100);
  assert.ok(logs.json.logs.endsWith(`${MARKER}{"big":true}\n`));
});

test('output beyond the log cap stops the job: FAILED log_limit_exceeded', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { maxLogBytes: 256 * 1024, stopGraceMs: 200 } } });
  const token = await gw.adminToken();
  const run = await gw.request('POST', `${JOBS}/run`, {
    token,
    json: { entrypoint: 'while :; do echo 0123456789abcdef0123456789abcdef; done', timeout_seconds: 60 },
  });
  assert.equal(run.json.status, 'FAILED');
  assert.equal(run.json.error_type, 'log_limit_exceeded');
  assert.equal(run.json.timed_out, false);
});

test('logs past retention are purged: /logs and /result answer 410 job_logs_expired', async (t) => {
  const gw = await startTestGateway(t, { jobs: { logRetentionSeconds: 1 } });
  const token = await gw.adminToken();
  const run = await gw.request('POST', `${JOBS}/run`, { token, json: { entrypoint: `echo '${MARKER}{"x":1}'` } });
  assert.equal((await gw.request('GET', `${JOBS}/${run.json.id}/result`, { token })).status, 200);
  const logsOf = () => gw.request('GET', `${JOBS}/${run.json.id}/logs`, { token });
  await waitUntil(async () => (await logsOf()).status === 410, { what: 'the purge after one second of retention' });
  for (const suffix of ['logs', 'result']) {
    const res = await gw.request('GET', `${JOBS}/${run.json.id}/${suffix}`, { token });
    assert.deepEqual([res.status, res.json.detail.reason], [410, 'job_logs_expired'], suffix);
  }
  assert.equal(existsSync(join(gw.dataDir, 'jobs', run.json.id)), false, 'the job directory is gone');
  assert.equal((await gw.request('GET', `${JOBS}/${run.json.id}/status`, { token })).json.status, 'SUCCEEDED');
});
