/**
 * What an operator sees of the runtime proxy, read from a real gateway: every
 * 401 on a runtime URL in `meshgate_auth_failures_total` as the API counts
 * one; per-deployment request series, the upstream health gauge and the build
 * info on the admin listener, with labels that bogus ids cannot grow; a dead
 * upstream's failures folded into one warning that names the request; and
 * access lines with client, user agent, bytes, upstream time, deployment and
 * failure.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { test } from 'node:test';
import { request } from 'undici';
import WebSocket from 'ws';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { parsePrometheus, type Sample, total } from '../../../helpers/peers/prometheus.ts';
import { DEAD_UPSTREAM, deploy, startAppServer, startToolServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';

async function scrape(gw: TestGateway): Promise<Sample[]> {
  const res = await request(`${gw.gateway.adminUrl}/metrics`);
  const text = await res.body.text();
  assert.equal(res.statusCode, 200, text);
  return parsePrometheus(text);
}

/** A websocket handshake's refusal status. */
async function refusedUpgrade(gw: TestGateway, url: string, headers: Record<string, string>): Promise<number> {
  const ws = new WebSocket(url, { ca: gw.gateway.caPem, headers });
  ws.on('error', () => {}); // terminating a refused handshake reports it as an error too
  const [, res] = await once(ws, 'unexpected-response');
  ws.terminate();
  return res.statusCode as number;
}

test('every 401 on a runtime URL is counted under the reason the API would count', async (t) => {
  const gw = await startTestGateway(t, { admin: { port: 0 } });
  const app = await startAppServer(t);
  const d = await deploy(gw, { kind: 'app', name: 'counted', upstream: app.url });
  const failures = async () => {
    const samples = await scrape(gw);
    return {
      missing: total(samples, 'meshgate_auth_failures_total', { reason: 'credential_missing' }),
      refused: total(samples, 'meshgate_auth_failures_total', { reason: 'not_authenticated' }),
    };
  };
  const before = await failures();
  const path = `/runtime/apps/${d.id}/dashboard`;
  const bogus = `/runtime/apps/${randomUUID()}/dashboard`;
  for (const [target, headers] of [
    [path, {}],
    [bogus, {}],
    [path, { cookie: 'meshgate_session=stale.session.cookie' }],
    [path, { authorization: 'Bearer not-a-token' }],
  ] as const) {
    assert.equal((await gw.request('GET', target, { headers })).status, 401, target);
  }
  const ws = `${gw.url.replace('https', 'wss')}${path}`;
  assert.equal(await refusedUpgrade(gw, ws, {}), 401);
  assert.equal(await refusedUpgrade(gw, ws, { authorization: 'Bearer not-a-token' }), 401);
  // A navigating browser is sent to the login page: a redirect, not a 401, and not counted.
  const navigation = await gw.request('GET', path, { headers: { accept: 'text/html' } });
  assert.equal(navigation.status, 302);

  const after = await failures();
  assert.equal(after.missing - before.missing, 3, 'no credential: plain, bogus id, websocket');
  assert.equal(after.refused - before.refused, 3, 'a refused cookie or bearer, each counted once');
});

test('per-deployment request series, upstream health and build info; bogus ids add no series', async (t) => {
  const gw = await startTestGateway(t, { admin: { port: 0 }, serving: { healthIntervalMs: 100 } });
  const app = await startAppServer(t);
  const token = await gw.adminToken();
  const live = await deploy(gw, { kind: 'app', name: 'live', upstream: app.url });
  const dead = await deploy(gw, { kind: 'app', name: 'dead', upstream: DEAD_UPSTREAM });
  for (let i = 0; i < 3; i++)
    assert.equal((await gw.request('GET', `${live.runtime_path}/dashboard`, { token })).status, 200);
  assert.equal((await gw.request('GET', `${dead.runtime_path}/dashboard`, { token })).status, 502);

  const bogusIds = Array.from({ length: 40 }, () => randomUUID());
  for (const id of bogusIds) {
    assert.equal((await gw.request('GET', `/runtime/apps/${id}/x`, { token })).status, 404);
    assert.equal((await gw.request('GET', `/runtime/models/${id}/x`)).status, 401);
  }

  const samples = await waitFor(
    async () => {
      const read = await scrape(gw);
      const probed = read.filter((s) => s.name === 'meshgate_upstream_healthy').length === 2;
      return probed ? read : null;
    },
    { what: 'both deployments probed' },
  );
  const requests = (deployment: string, status_class: string) =>
    total(samples, 'meshgate_http_request_duration_seconds_count', { deployment, status_class });
  assert.equal(requests(live.id, '2xx'), 3);
  assert.equal(requests(dead.id, '5xx'), 1);
  assert.ok(total(samples, 'meshgate_http_request_duration_seconds_sum', { deployment: live.id }) > 0);
  assert.equal(total(samples, 'meshgate_upstream_healthy', { deployment: live.id }), 1);
  assert.equal(total(samples, 'meshgate_upstream_healthy', { deployment: dead.id }), 0);

  const info = samples.filter((s) => s.name === 'meshgate_build_info');
  assert.equal(info.length, 1);
  assert.equal(info[0]?.value, 1);
  assert.match(String(info[0]?.labels.version), /^\d+\.\d+\.\d+/);
  assert.equal(info[0]?.labels.commit, 'source', 'run from the sources');

  const deployments = new Set(samples.map((s) => s.labels.deployment).filter(Boolean));
  assert.deepEqual([...deployments].sort(), [live.id, dead.id].sort(), 'only registered deployments are labels');
  const labelValues = samples.flatMap((s) => Object.values(s.labels));
  assert.ok(!bogusIds.some((id) => labelValues.some((v) => v.includes(id))), 'no bogus id reaches a label');
});

test("a dead upstream's failures: one warning naming the request, the rest folded; access lines say why", async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const dead = await deploy(gw, { kind: 'app', name: 'dead', upstream: DEAD_UPSTREAM });
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await gw.request('GET', `${dead.runtime_path}/page-${i}`, { token });
    assert.equal(res.status, 502);
    ids.push((res.json as { detail: { request_id: string } }).detail.request_id);
  }
  const line = await gw.accessLine(ids[19] as string);
  assert.equal(line.failure, 'upstream_unreachable');
  assert.equal(line.deployment, dead.id);
  assert.equal(typeof line.upstream_ms, 'number');

  const warnings = gw.logs
    .join('')
    .split('\n')
    .filter((l) => l.includes('"msg":"request failed"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  // Twenty quick requests fall in one fold window; a slow box may cross into a second, never a line each.
  assert.ok(warnings.length >= 1 && warnings.length <= 2, `${warnings.length} warnings for 20 failures`);
  const first = warnings[0] as Record<string, unknown>;
  assert.equal(first.req_id, ids[0]);
  assert.equal(first.deployment, dead.id);
  assert.equal(first.path, `${dead.runtime_path}/page-0`);
  assert.equal(first.reason, 'upstream_unreachable');
});

test('access lines: client, user agent, bytes, upstream time; a forged X-Forwarded-For is no client', async (t) => {
  const gw = await startTestGateway(t);
  const tool = await startToolServer(t);
  const token = await gw.adminToken();
  const d = await deploy(gw, { kind: 'tool', name: 'upload', upstream: tool.url });
  const hostile = 'probe/1.0","client":"203.0.113.66","user":"admin';
  const upload = Buffer.alloc(70_000, 1);
  const res = await gw.request('POST', `${d.runtime_path}/upload`, {
    token,
    body: upload,
    headers: { 'user-agent': hostile, 'x-forwarded-for': '203.0.113.66', 'x-request-id': randomUUID() },
  });
  assert.equal(res.status, 200, res.text);
  assert.equal((res.json as { bytes: number }).bytes, upload.length);
  const line = await gw.accessLine(String(res.headers['x-request-id']));
  assert.equal(line.client, '127.0.0.1', 'the socket peer: the gateway trusts no proxy by default');
  assert.equal(line.ua, hostile, 'the user agent stays one string value');
  assert.notEqual(line.user, 'admin');
  assert.equal(line.req_bytes, upload.length);
  assert.equal(line.res_bytes, Buffer.byteLength(res.text));
  assert.equal(line.deployment, d.id);
  assert.ok(typeof line.upstream_ms === 'number' && line.upstream_ms >= 0);
  assert.equal('failure' in line, false);
});

test('behind a trusted proxy the client is the address it forwarded for', async (t) => {
  const gw = await startTestGateway(t, { auth: { forwardAuth: { trustedProxies: ['127.0.0.1'] } } });
  const res = await gw.request('GET', '/api/ping', {
    headers: { 'x-forwarded-for': 'spoofed-by-client, 198.51.100.23' },
  });
  assert.equal(res.status, 200);
  const line = await gw.accessLine(String(res.headers['x-request-id']));
  assert.equal(line.client, '198.51.100.23');
});
