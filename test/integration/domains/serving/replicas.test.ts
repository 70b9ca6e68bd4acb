/**
 * Deployments with several replicas, each a real process killed with SIGKILL and restarted: the spread of the
 * balancing (weights honoured), failover without a failed GET, a replica back in rotation after its restart,
 * retries counted and bounded (a POST whose body left is never sent twice), cookie affinity and its abuse, and
 * `no_healthy_upstream` once the probes ejected every replica.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { request } from 'undici';
import { WebSocket } from 'ws';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { parsePrometheus, total } from '../../../helpers/peers/prometheus.ts';
import { type ReplicaProcess, startReplica } from '../../../helpers/replicas.ts';
import { deploy, startAppServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';

const METRICS_TOKEN = 'metrics-token-for-tests-0123456789';

async function replicas(t: Parameters<typeof startReplica>[0], ...names: string[]): Promise<ReplicaProcess[]> {
  return Promise.all(names.map((name) => startReplica(t, name)));
}

/** Who answered each of `n` GETs of `path` (the `x-replica` header), or the status of a failed one. */
async function whoAnswers(gw: TestGateway, path: string, n: number, token: string, cookie?: string) {
  const answers: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await gw.request('GET', path, { token, headers: cookie ? { cookie } : {} });
    answers.push(res.status === 200 ? String(res.headers['x-replica']) : `status ${res.status}`);
  }
  return answers;
}

function tally(answers: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of answers) counts[a] = (counts[a] ?? 0) + 1;
  return counts;
}

async function metric(gw: TestGateway, name: string, labels: Record<string, string>): Promise<number> {
  const res = await request(`${gw.gateway.adminUrl}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return total(await parsePrometheus(await res.body.text()), name, labels);
}

test('replicas share the traffic by weight; a killed one costs no GET and is back after its restart', async (t) => {
  const gw = await startTestGateway(t, { admin: { port: 0, metricsToken: METRICS_TOKEN } });
  const [a, b, c] = await replicas(t, 'a', 'b', 'c');
  const d = await deploy(gw, {
    kind: 'model',
    name: 'spread',
    upstreams: [
      { url: a?.url, weight: 1 },
      { url: b?.url, weight: 1 },
      { url: c?.url, weight: 2 },
    ],
  });
  const token = await gw.adminToken();
  const path = `${d.runtime_path}/who`;
  const spread = tally(await whoAnswers(gw, path, 400, token));
  // Expected 100 / 100 / 200: bounds many standard deviations wide, never flaky, still telling the weight apart.
  assert.ok((spread.a ?? 0) > 50 && (spread.a ?? 0) < 160, JSON.stringify(spread));
  assert.ok((spread.b ?? 0) > 50 && (spread.b ?? 0) < 160, JSON.stringify(spread));
  assert.ok((spread.c ?? 0) > 130 && (spread.c ?? 0) < 280, JSON.stringify(spread));

  await c?.kill();
  const during = tally(await whoAnswers(gw, path, 60, token));
  assert.deepEqual(Object.keys(during).sort(), ['a', 'b'], 'every GET answered, by the live replicas');
  const retried = await metric(gw, 'meshgate_upstream_retries_total', { deployment: d.id, cause: 'connect' });
  assert.ok(retried >= 1, 'the refused attempts were retried and counted');
  assert.ok(retried <= 60, 'at most one retry per request reached the dead replica');

  await c?.restart();
  await waitFor(async () => (await whoAnswers(gw, path, 10, token)).includes('c'), {
    timeoutMs: 10_000,
    what: 'the restarted replica back in rotation',
  });
});

test('a POST is retried only when none of it left; one whose body reached a replica is never sent twice', async (t) => {
  const gw = await startTestGateway(t);
  const [live, dropping] = await replicas(t, 'live', 'dropping');
  const token = await gw.adminToken();
  // A replica that is down: the POST never reached it, so it goes to the live one, body intact, exactly once.
  const dead = await startReplica(t, 'dead');
  await dead.kill();
  const refused = await deploy(gw, {
    kind: 'tool',
    name: 'refused',
    upstreams: [{ url: dead.url }, { url: live?.url }],
  });
  const body = 'x'.repeat(200_000);
  for (let i = 0; i < 10; i++) {
    const res = await gw.request('POST', `${refused.runtime_path}/echo`, { token, body });
    assert.equal(res.status, 200);
    assert.equal(res.text, String(body.length));
  }
  assert.deepEqual(live?.received, new Array(10).fill(body.length), 'each POST reached the live replica once');

  // A replica that read the body and dropped the connection: the POST may have had its effect, so it is not sent
  // again, to it or to another replica; the client gets 502.
  const risky = await deploy(gw, {
    kind: 'tool',
    name: 'risky',
    upstreams: [{ url: dropping?.url }],
  });
  const dropped = await gw.request('POST', `${risky.runtime_path}/drop`, { token, body: 'once' });
  assert.equal(dropped.status, 502);
  assert.deepEqual(dropping?.received, [4], 'the POST body reached the replica exactly once');
});

test('idempotent requests are retried on 502/503 within the retry limit; other statuses pass through', async (t) => {
  // Outlier detection out of the way: here every replica answers 503 on that path, and none is to be ejected.
  const gw = await startTestGateway(t, {
    admin: { port: 0, metricsToken: METRICS_TOKEN },
    serving: { outlierConsecutiveFailures: 1000 },
  });
  const [one, two] = await replicas(t, 'one', 'two');
  const token = await gw.adminToken();
  const d = await deploy(gw, {
    kind: 'app',
    name: 'flaky',
    retries: 1,
    upstreams: [{ url: one?.url }, { url: two?.url }],
  });
  for (let i = 0; i < 20; i++) {
    const res = await gw.request('GET', `${d.runtime_path}/status/503`, { token });
    assert.equal(res.status, 503, "the last attempt's answer passes");
  }
  const retries = await metric(gw, 'meshgate_upstream_retries_total', { deployment: d.id, cause: 'status' });
  assert.equal(retries, 20, 'one retry per request (retries: 1), never more');
  const notFound = await gw.request('GET', `${d.runtime_path}/status/404`, { token });
  assert.equal(notFound.status, 404);
  const none = await gw.request('GET', `${d.runtime_path}/status/500`, { token });
  assert.equal(none.status, 500, 'a 500 is the replica speaking: not retried');
  assert.equal(await metric(gw, 'meshgate_upstream_retries_total', { deployment: d.id, cause: 'status' }), 20);
});

test('cookie affinity pins a browser to a replica, re-pins it when that one is gone, trusts no forgery', async (t) => {
  const gw = await startTestGateway(t, { serving: { outlierConsecutiveFailures: 1 } });
  const [a, b, c] = await replicas(t, 'a', 'b', 'c');
  const token = await gw.adminToken();
  const d = await deploy(gw, {
    kind: 'app',
    name: 'notebook',
    affinity: 'cookie',
    upstreams: [{ url: a?.url }, { url: b?.url }, { url: c?.url }],
  });
  const path = `${d.runtime_path}/who`;
  const first = await gw.request('GET', path, { token });
  const setCookie = String(first.headers['set-cookie']);
  const pair = /meshgate_affinity=(\d+)/.exec(setCookie);
  assert.ok(pair, setCookie);
  assert.match(setCookie, new RegExp(`Path=${d.runtime_path}; Secure; HttpOnly; SameSite=Lax`));
  const pinned = String(first.headers['x-replica']);
  const cookie = `other=1; ${pair[0]}`;
  assert.deepEqual(new Set(await whoAnswers(gw, path, 20, token, cookie)), new Set([pinned]), 'always the same one');

  // Forged values name no replica: balanced as usual and pinned to a real one.
  for (const forged of ['99', '-1', '1e1', 'abc', '0x1', `${pair[1]}${pair[1]}${pair[1]}`]) {
    const res = await gw.request('GET', path, { token, headers: { cookie: `meshgate_affinity=${forged}` } });
    assert.equal(res.status, 200, forged);
    assert.match(String(res.headers['set-cookie']), /meshgate_affinity=[0-2];/, forged);
  }

  const byName = { a, b, c } as Record<string, ReplicaProcess>;
  await byName[pinned]?.kill();
  const moved = await gw.request('GET', path, { token, headers: { cookie } });
  assert.equal(moved.status, 200, 'the request went to a live replica');
  assert.notEqual(moved.headers['x-replica'], pinned);
  assert.match(String(moved.headers['set-cookie']), /meshgate_affinity=\d+/, 're-pinned');
});

test("a websocket app's upgrade goes to the replica its affinity cookie names, the cookie kept from it", async (t) => {
  const gw = await startTestGateway(t);
  const apps = [await startAppServer(t), await startAppServer(t)];
  const token = await gw.adminToken();
  const d = await deploy(gw, {
    kind: 'app',
    name: 'ws-app',
    affinity: 'cookie',
    upstreams: apps.map((app) => ({ url: app.url })),
  });
  const url = `${gw.url.replace('https', 'wss')}${d.runtime_path}/ws`;
  for (const index of [0, 1, 1, 0]) {
    const headers = { authorization: `Bearer ${token}`, cookie: `meshgate_affinity=${index}; theme=dark` };
    const ws = new WebSocket(url, { ca: gw.gateway.caPem, headers });
    await once(ws, 'open');
    ws.send('ping');
    assert.equal(String((await once(ws, 'message'))[0]), 'echo:ping');
    ws.close();
    await once(ws, 'close');
    const pinned = apps[index];
    assert.equal(pinned?.lastPath, '/ws', `replica ${index} took the upgrade`);
    assert.equal(pinned?.lastHeaders?.cookie, 'theme=dark', 'the affinity cookie never reaches the upstream');
    if (pinned) pinned.lastPath = null;
    assert.equal(apps[1 - index]?.lastPath ?? null, null, 'the other replica saw nothing');
  }
});

test('with every replica ejected by its probes the answer is 503 no_healthy_upstream with Retry-After', async (t) => {
  const gw = await startTestGateway(t, {
    admin: { port: 0, metricsToken: METRICS_TOKEN },
    serving: { healthIntervalMs: 100, healthUnhealthyThreshold: 2, healthHealthyThreshold: 1 },
  });
  const [a, b] = await replicas(t, 'a', 'b');
  const token = await gw.adminToken();
  const d = await deploy(gw, { kind: 'model', name: 'gone', upstreams: [{ url: a?.url }, { url: b?.url }] });
  await Promise.all([a?.kill(), b?.kill()]);
  await waitFor(
    async () => {
      const res = await gw.request('GET', `/api/serving/deployments/${d.id}`, { token });
      return res.json.health.replicas.every((r: { ejected: boolean }) => r.ejected);
    },
    { timeoutMs: 10_000, what: 'both replicas ejected by the probes' },
  );
  const refused = await waitFor(
    async () => {
      const res = await gw.request('GET', `${d.runtime_path}/who`, { token });
      return res.status === 503 ? res : null;
    },
    { timeoutMs: 5000, what: 'the verdict read by the proxy' },
  );
  assert.equal(refused.json.detail.reason, 'no_healthy_upstream');
  assert.equal(await metric(gw, 'meshgate_upstream_replica_ejected', { deployment: d.id }), 2, 'both, in /metrics');
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  assert.ok(!refused.text.includes('127.0.0.1'), 'no address disclosed');

  await a?.restart();
  await waitFor(async () => (await gw.request('GET', `${d.runtime_path}/who`, { token })).status === 200, {
    timeoutMs: 10_000,
    what: 'the restarted replica admitted again by its probes',
  });
});
