/**
 * The admin listener's /metrics, scraped over real HTTP and read with
 * Prometheus's reference text parser: the bearer token is enforced, the
 * request, proxy and auth counters move with real traffic, labels carry
 * route templates and deployment ids but never a request's path or ids,
 * and the process metrics (event loop, GC, memory) are there. Also: an
 * upstream continues the caller's W3C trace with tracing export off.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { request } from 'undici';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { parsePrometheus, type Sample, total } from '../../../helpers/peers/prometheus.ts';
import { DEAD_UPSTREAM, deploy, startAppServer } from '../../../helpers/upstreams.ts';

const TOKEN = 'metrics-token-for-tests-0123456789';

async function scrape(gw: TestGateway, token: string | null = TOKEN) {
  const res = await request(`${gw.gateway.adminUrl}/metrics`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: res.statusCode, type: res.headers['content-type'], text: await res.body.text() };
}

async function samples(gw: TestGateway): Promise<{ parsed: Sample[]; text: string }> {
  const res = await scrape(gw);
  assert.equal(res.status, 200, res.text);
  assert.match(String(res.type), /^text\/plain; version=0\.0\.4/);
  return { parsed: await parsePrometheus(res.text), text: res.text };
}

test('/metrics: token enforced, counters move with traffic, labels bounded, process metrics present', async (t) => {
  const gw = await startTestGateway(t, { admin: { port: 0, metricsToken: TOKEN } });
  assert.match(gw.gateway.adminUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+$/, 'loopback by default');

  for (const token of [null, 'wrong-token-of-enough-length']) {
    const refused = await scrape(gw, token);
    assert.equal(refused.status, 401);
    assert.deepEqual(JSON.parse(refused.text), { detail: 'Not authenticated' }, 'the not_authenticated answer');
    assert.ok(!refused.text.includes('meshgate_'), 'nothing of the metrics leaks to a refused scrape');
  }
  const elsewhere = await request(`${gw.gateway.adminUrl}/api/ping`);
  assert.equal(elsewhere.statusCode, 404, 'the admin listener serves /metrics only');
  await elsewhere.body.dump();

  const before = await samples(gw);
  const app = await startAppServer(t);
  const token = await gw.adminToken();
  const deployment = await deploy(gw, { kind: 'app', name: 'metrics-app', upstream: app.url });
  const broken = await deploy(gw, { kind: 'app', name: 'metrics-dead', upstream: DEAD_UPSTREAM });
  for (let i = 0; i < 3; i++) assert.equal((await gw.request('GET', '/api/ping')).status, 200);
  assert.equal((await gw.request('GET', '/api/auth/users/me')).status, 401);
  assert.equal((await gw.request('GET', '/api/auth/users/me', { token: 'not-a-token' })).status, 401);
  const jobId = randomUUID();
  assert.equal((await gw.request('GET', `/api/cluster/jobs/${jobId}/status`, { token })).status, 404);
  const traceId = randomUUID().replaceAll('-', '');
  const proxied = await gw.request('GET', `/runtime/apps/${deployment.id}/dashboard`, {
    token,
    headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
  });
  assert.equal(proxied.status, 200, proxied.text);
  assert.equal((await gw.request('GET', `/runtime/apps/${broken.id}/dashboard`, { token })).status, 502);

  const after = await samples(gw);
  const moved = (name: string, labels: Record<string, string>) =>
    total(after.parsed, name, labels) - total(before.parsed, name, labels);
  const ping = { service: 'api', route: '/ping', status_class: '2xx' };
  assert.equal(moved('meshgate_http_request_duration_seconds_count', ping), 3, 'each ping counted once');
  assert.ok(total(after.parsed, 'meshgate_http_request_duration_seconds_sum', ping) > 0);
  assert.equal(moved('meshgate_auth_failures_total', { reason: 'credential_missing' }), 1);
  assert.equal(moved('meshgate_auth_failures_total', { reason: 'not_authenticated' }), 1);
  const status = { route: '/cluster/jobs/:job_id/status', status_class: '4xx' };
  assert.equal(moved('meshgate_http_request_duration_seconds_count', status), 1, 'the route template, not the path');
  assert.ok(!after.text.includes(jobId), 'no id from a path reaches a label');
  assert.equal(
    moved('meshgate_http_request_duration_seconds_count', { service: 'apps', route: '/', status_class: '2xx' }),
    1,
  );
  assert.equal(
    total(after.parsed, 'meshgate_upstream_errors_total', { deployment: broken.id, reason: 'upstream_unreachable' }),
    1,
  );
  assert.equal(total(after.parsed, 'meshgate_upstream_requests_in_flight', { deployment: deployment.id }), 0);
  assert.ok(
    total(after.parsed, 'meshgate_upstream_pool_connections', { deployment: deployment.id, state: 'connected' }) >= 1,
  );
  for (const name of [
    'process_cpu_user_seconds_total',
    'process_resident_memory_bytes',
    'nodejs_eventloop_lag_seconds',
    'nodejs_heap_size_used_bytes',
  ]) {
    assert.ok(
      after.parsed.some((s) => s.name === name),
      `${name} is exposed`,
    );
  }
  assert.match(after.text, /^# TYPE nodejs_gc_duration_seconds histogram$/m);

  const sent = app.lastHeaders?.traceparent;
  assert.match(String(sent), new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`), 'the upstream continues the caller trace');
  assert.notEqual(String(sent).split('-')[2], '00f067aa0ba902b7', 'its parent is this hop, not the caller');
});

test(
  '/metrics without a token configured answers any local scrape; a ' + 'malformed traceparent starts a new trace',
  async (t) => {
    const gw = await startTestGateway(t, { admin: { port: 0 } });
    const app = await startAppServer(t);
    const d = await deploy(gw, { kind: 'app', name: 'trace-app', upstream: app.url });
    const res = await gw.request('GET', `/runtime/apps/${d.id}/dashboard`, {
      token: await gw.adminToken(),
      headers: { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' },
    });
    assert.equal(res.status, 200);
    const sent = String(app.lastHeaders?.traceparent);
    assert.match(sent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/, 'a fresh, unsampled trace');
    assert.notEqual(sent.split('-')[1], '0'.repeat(32));
    assert.equal((await scrape(gw, null)).status, 200);
  },
);
