/**
 * What the deployments API reports of each upstream: the probe's last result
 * (live upstreams healthy by TCP connect and by HTTP GET of a health path, a
 * stopped one and a failing health path unhealthy with their reasons) and the
 * requests proxied to it, on the API and in /metrics; neither of a hidden
 * deployment reaches a caller who cannot see it. An owner's stream of changes,
 * each probing the deployment again, never puts more than one probe of it in
 * flight nor more than `serving.healthConcurrency` in all.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { DEAD_UPSTREAM, deploy, startAppServer, startHoldingServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';

/** Probes every 100 ms so a result is due within a bounded wait. */
const FAST_PROBES = { serving: { healthIntervalMs: 100, healthTimeoutMs: 1000 } };

async function deployment(gw: TestGateway, id: string, token?: string) {
  return gw.request('GET', `/api/serving/deployments/${id}`, { token: token ?? (await gw.adminToken()) });
}

/** Polls the deployment (every 20 ms, 10 s at most) until its health satisfies `done`. */
async function healthOnceSettled(gw: TestGateway, id: string, done: (health: any) => boolean) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { health } = (await deployment(gw, id)).json;
    if (done(health)) return health;
    if (Date.now() > deadline) throw new Error(`health of ${id} never settled: ${JSON.stringify(health)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('a live upstream reads healthy, a stopped one unhealthy with a reason, a failing health path too', async (t) => {
  const gw = await startTestGateway(t, FAST_PROBES);
  const live = await startAppServer(t);
  const doomed = await startAppServer(t);
  const byTcp = await deploy(gw, { kind: 'app', name: 'by-tcp', upstream: live.url });
  const byHttp = await deploy(gw, { kind: 'app', name: 'by-http', upstream: live.url, health_path: '/dashboard' });
  const missing = await deploy(gw, { kind: 'app', name: 'missing', upstream: live.url, health_path: '/healthz' });
  const stopping = await deploy(gw, { kind: 'app', name: 'stopping', upstream: doomed.url });

  for (const { id } of [byTcp, byHttp, stopping]) {
    const health = await healthOnceSettled(gw, id, (h) => h.status !== 'unknown');
    assert.deepEqual(
      { ...health, checked_at: typeof health.checked_at, replicas: health.replicas.map((r: any) => r.status) },
      {
        status: 'healthy',
        reason: null,
        detail: null,
        checked_at: 'string',
        replicas: ['healthy'],
      },
    );
  }
  // Same upstream, one path answers and one does not: the HTTP probe GETs the deployment's own health path.
  const notFound = await healthOnceSettled(gw, missing.id, (h) => h.status !== 'unknown');
  assert.deepEqual(
    [notFound.status, notFound.reason, notFound.detail],
    ['unhealthy', 'upstream_unhealthy_status', 'HTTP 404'],
  );

  doomed.server.closeAllConnections();
  await new Promise((resolve) => doomed.server.close(resolve));
  const down = await healthOnceSettled(gw, stopping.id, (h) => h.status === 'unhealthy');
  assert.equal(down.reason, 'upstream_unreachable');
  assert.equal(down.detail, 'ECONNREFUSED');
  const [replica] = down.replicas;
  assert.deepEqual(
    [replica.status, replica.reason, replica.detail],
    ['unhealthy', 'upstream_unreachable', 'ECONNREFUSED'],
  );
  const why = JSON.stringify([down.reason, down.detail, replica.reason, replica.detail]);
  assert.ok(!why.includes(new URL(doomed.url).port), 'the reason names no address');

  const listed = await gw.request('GET', '/api/serving/deployments?kind=app', { token: await gw.adminToken() });
  const health = Object.fromEntries(listed.json.map((d: any) => [d.name, d.health.status]));
  assert.deepEqual(health, { 'by-tcp': 'healthy', 'by-http': 'healthy', missing: 'unhealthy', stopping: 'unhealthy' });

  const bad = await gw.request('POST', '/api/serving/deployments', {
    token: await gw.adminToken(),
    json: { kind: 'app', name: 'bad', upstream: live.url, health_path: 'healthz' },
  });
  assert.equal(bad.status, 422);
  assert.deepEqual(bad.json.detail[0].loc, ['body', 'health_path']);
});

test('runtime URL requests are counted on the API and in /metrics; a hidden deployment shows nothing', async (t) => {
  const gw = await startTestGateway(t, { ...FAST_PROBES, admin: { port: 0 } });
  const app = await startAppServer(t);
  const shared = await deploy(gw, { kind: 'app', name: 'shared', upstream: app.url, visibility: 'authenticated' });
  const hidden = await deploy(gw, { kind: 'app', name: 'hidden', upstream: app.url });
  const admin = await gw.adminToken();
  const REQUESTS = 7;
  for (let i = 0; i < REQUESTS; i++) {
    const res = await gw.request('GET', `${shared.runtime_path}/dashboard`, { token: admin });
    assert.equal(res.status, 200);
  }
  await gw.request('GET', `${hidden.runtime_path}/dashboard`, { token: admin });

  const counted = (await deployment(gw, shared.id)).json.traffic;
  assert.equal(counted.requests, REQUESTS, 'this process counts at once, flushed or not');
  assert.ok(Date.parse(counted.last_request_at) > Date.now() - 60_000);
  const scraped = await (await request(`${gw.gateway.adminUrl}/metrics`)).body.text();
  assert.match(scraped, new RegExp(`meshgate_upstream_requests_total\\{deployment="${shared.id}"\\} ${REQUESTS}\\b`));

  // The counts reach the table (every process adds its share there) without being counted twice.
  const sqlite = gw.gateway.deps.sql;
  const stored = () =>
    sqlite.prepare('SELECT requests FROM deployment_traffic WHERE deployment_id = ?').pluck().get(shared.id);
  const deadline = Date.now() + 5000;
  while (stored() !== REQUESTS) {
    assert.ok(Date.now() < deadline, `the table never held ${REQUESTS}: ${stored()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal((await deployment(gw, shared.id)).json.traffic.requests, REQUESTS);

  const { token: user } = await gw.userToken('plain');
  const seen = await gw.request('GET', '/api/serving/deployments?kind=all', { token: user });
  assert.deepEqual(
    seen.json.map((d: any) => d.name),
    ['shared'],
  );
  assert.equal(seen.json[0].traffic.requests, REQUESTS, 'a caller who sees a deployment sees its figures');
  assert.ok(['healthy', 'unknown'].includes(seen.json[0].health.status));
  assert.ok(!('upstream' in seen.json[0]) && !('health_path' in seen.json[0]), 'where it is probed stays with admins');
  const refused = await deployment(gw, hidden.id, user);
  assert.equal(refused.status, 404);
  assert.deepEqual(Object.keys(refused.json.detail).sort(), ['id', 'reason', 'request_id']);
  assert.ok(!refused.text.includes('health') && !refused.text.includes('traffic'));
});

test("an owner's stream of changes never stacks probes of the deployment beyond one in flight", async (t) => {
  // One round only (at start, with no deployment): every probe after it comes from a change.
  const gw = await startTestGateway(t, {
    serving: { healthIntervalMs: 3_600_000, healthTimeoutMs: 30_000, healthConcurrency: 2 },
  });
  const upstream = await startHoldingServer(t);
  const feed = gw.gateway.deps.feed;
  const held = await deploy(gw, { kind: 'app', name: 'held-health', upstream: upstream.url, health_path: '/held' });
  const owner = await gw.userToken('owner');
  const grant = await gw.request('POST', '/api/auth/tuples', {
    token: await gw.adminToken(),
    json: {
      subject: { namespace: 'user', id: owner.id },
      relation: 'owner',
      object: { namespace: 'app', id: held.id },
    },
  });
  assert.equal(grant.status, 204);
  feed.catchUp();
  await until(() => upstream.held === 1, 'the first probe reached the upstream');

  // Each change is delivered at once; before the fix each started one more probe of the same upstream.
  const CHANGES = 12;
  for (let i = 0; i < CHANGES; i++) {
    const visibility = i % 2 === 0 ? 'authenticated' : 'private';
    const res = await gw.request('PATCH', `/api/serving/deployments/${held.id}`, {
      token: owner.token,
      json: { visibility },
    });
    assert.equal(res.status, 200, res.text);
    feed.catchUp();
  }
  // Another deployment is still probed meanwhile (the second lane), so the queue is not stuck behind the held one.
  const quick = await deploy(gw, { kind: 'app', name: 'quick-health', upstream: upstream.url, health_path: '/quick' });
  feed.catchUp();
  await healthOnceSettled(gw, quick.id, (h) => h.status === 'healthy');
  assert.equal(upstream.maxHeld, 1, 'one probe of the deployment in flight, however many changes');

  upstream.release();
  const health = await healthOnceSettled(gw, held.id, (h) => h.status !== 'unknown');
  assert.equal(health.status, 'healthy');
});

async function until(holds: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!holds()) {
    assert.ok(Date.now() < deadline, `never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('the last hour of traffic by minute: requests, 4xx and 5xx, head percentiles; hidden from others', async (t) => {
  const gw = await startTestGateway(t);
  const app = await startAppServer(t);
  const d = await deploy(gw, { kind: 'app', name: 'charted', upstream: app.url });
  const admin = await gw.adminToken();
  for (let i = 0; i < 6; i++)
    assert.equal((await gw.request('GET', `${d.runtime_path}/dashboard`, { token: admin })).status, 200);
  for (let i = 0; i < 2; i++)
    assert.equal((await gw.request('GET', `${d.runtime_path}/nothing`, { token: admin })).status, 404);
  const dead = await deploy(gw, { kind: 'app', name: 'dead-charted', upstream: DEAD_UPSTREAM });
  assert.equal((await gw.request('GET', `${dead.runtime_path}/`, { token: admin })).status, 502);

  const minutes = await waitFor(
    async () => {
      const res = await gw.request('GET', `/api/serving/deployments/${d.id}/traffic`, { token: admin });
      const total = res.json.reduce((sum: number, m: any) => sum + m.requests_per_second * 60, 0);
      return Math.round(total) === 8 ? res.json : null;
    },
    { timeoutMs: 5000, what: 'the counts written (each second)' },
  );
  assert.equal(minutes.length, 60, 'one entry per minute of the last hour');
  const busy = minutes.filter((m: any) => m.requests_per_second > 0);
  assert.equal(
    busy.reduce((sum: number, m: any) => sum + m.client_errors, 0),
    2,
  );
  assert.equal(
    busy.reduce((sum: number, m: any) => sum + m.server_errors, 0),
    0,
  );
  assert.ok(busy.every((m: any) => m.head_p50_ms > 0 && m.head_p99_ms >= m.head_p50_ms));
  const failed = await waitFor(async () => {
    const res = await gw.request('GET', `/api/serving/deployments/${dead.id}/traffic`, { token: admin });
    return res.json.find((m: any) => m.server_errors === 1);
  });
  assert.ok(failed, 'the 502 counted as a 5xx');

  const stranger = await gw.userToken('stranger');
  const hidden = await gw.request('GET', `/api/serving/deployments/${d.id}/traffic`, { token: stranger.token });
  assert.equal(hidden.status, 404, 'a deployment the caller may not see has no traffic to show');
});
