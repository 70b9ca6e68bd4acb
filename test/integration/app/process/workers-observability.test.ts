/**
 * The operator's view of `meshgate serve --workers 2` as shipped: the primary's
 * /metrics combines the workers' per-deployment request series and runtime
 * 401s, reads upstream health and build info once (not once per process); a
 * dead upstream's failures are warned about folded, naming the request; access
 * lines name the socket peer as the client whatever X-Forwarded-For an
 * untrusted client sends, and keep a hostile user agent one string.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { Client, request } from 'undici';
import { parsePrometheus, type Sample, total } from '../../../helpers/peers/prometheus.ts';
import { DEAD_UPSTREAM, startAppServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { adminToken, connection, freePort, servedBy, workersScratch } from '../../../helpers/workers.ts';

async function scrape(adminUrl: string): Promise<Sample[]> {
  const res = await request(`${adminUrl}/metrics`);
  const text = await res.body.text();
  assert.equal(res.statusCode, 200, text);
  return parsePrometheus(text);
}

const linesOf = (output: string, msg: string) =>
  output
    .split('\n')
    .filter((line) => line.includes(`"msg":"${msg}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

test('two workers: per-deployment series summed, health and build info once, 401s counted, lines safe', async (t) => {
  const { serve } = workersScratch(t, 'meshgate-observe-');
  const app = await startAppServer(t);
  const served = await serve(2, {
    PLATFORM_ADMIN_PORT: String(await freePort()),
    PLATFORM_UPSTREAM_HEALTH_INTERVAL_MS: '200',
  });
  const { admin: adminUrl } = JSON.parse(await served.waitForLine(/"msg":"primary started/)) as { admin: string };
  const token = await adminToken(served);
  const admin = connection(served);
  t.after(() => admin.close());
  const create = async (name: string, upstream: string) => {
    const res = await admin.call('POST', '/api/serving/deployments', { token, json: { kind: 'app', name, upstream } });
    assert.equal(res.status, 201, res.text);
    return res.json as { id: string; runtime_path: string };
  };
  const live = await create('live', app.url);
  const dead = await create('dead', DEAD_UPSTREAM);
  const before = await scrape(adminUrl);

  // New connections until both workers have proxied to the live deployment.
  const byWorker = new Set<number>();
  let proxied = 0;
  while (byWorker.size < 2) {
    assert.ok(proxied < 40, 'both workers served a connection');
    const conn = connection(served);
    const res = await conn.call('GET', `${live.runtime_path}/dashboard`, { token });
    await conn.close();
    assert.equal(res.status, 200, res.text);
    proxied++;
    byWorker.add(await servedBy(served, res.requestId));
  }
  const failed: string[] = [];
  const reasons = new Map<string, string>();
  for (let i = 0; i < 10; i++) {
    const res = await admin.call('GET', `${dead.runtime_path}/p${i}`, { token });
    // Refused at the connect (502), or, once the primary's probes have ejected the only replica, at once (503).
    const answer = `${res.status} ${res.json?.detail?.reason}`;
    assert.ok(['502 upstream_unreachable', '503 no_healthy_upstream'].includes(answer), answer);
    failed.push(res.requestId);
    reasons.set(res.requestId, res.json.detail.reason);
  }
  // No credential on a runtime URL, for a real id and for ids that name nothing: counted, and no series per id.
  const bogus = Array.from({ length: 20 }, () => randomUUID());
  for (const path of [`${live.runtime_path}/dashboard`, ...bogus.map((id) => `/runtime/apps/${id}/x`)]) {
    assert.equal((await admin.call('GET', path)).status, 401, path);
  }

  // A hostile user agent and a forged X-Forwarded-For from a client the gateway does not trust.
  const hostile = 'evil","client":"203.0.113.9","user":"admin","x":"';
  const client = new Client(served.base, { connect: { ca: served.ca } });
  t.after(() => client.close());
  const forgedId = randomUUID();
  const forged = await client.request({
    method: 'GET',
    path: '/api/ping',
    headers: { 'user-agent': hostile, 'x-forwarded-for': '203.0.113.9', 'x-request-id': forgedId },
  });
  assert.equal(forged.statusCode, 200);
  await forged.body.dump();
  const line = JSON.parse(await served.waitForLine(new RegExp(`"req_id":"${forgedId}"`), 5000));
  assert.match(String(line.client), /^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/, 'the socket peer, not the header');
  assert.equal(line.ua, hostile);
  assert.equal(line.user, undefined);

  const after = await waitFor(
    async () => {
      const read = await scrape(adminUrl);
      return read.filter((s) => s.name === 'meshgate_upstream_healthy').length === 2 ? read : null;
    },
    { what: 'both deployments probed', timeoutMs: 30_000 },
  );
  const moved = (name: string, labels: Record<string, string>) =>
    total(after, name, labels) - total(before, name, labels);
  const requests = 'meshgate_http_request_duration_seconds_count';
  assert.equal(moved(requests, { deployment: live.id, status_class: '2xx' }), proxied, 'summed over both workers');
  assert.equal(moved(requests, { deployment: dead.id, status_class: '5xx' }), 10);
  assert.equal(moved('meshgate_auth_failures_total', { reason: 'credential_missing' }), 21);
  assert.equal(total(after, 'meshgate_upstream_healthy', { deployment: live.id }), 1, 'once, not once a process');
  assert.equal(total(after, 'meshgate_upstream_healthy', { deployment: dead.id }), 0);
  const info = after.filter((s) => s.name === 'meshgate_build_info');
  assert.equal(info.length, 1);
  assert.equal(info[0]?.value, 1, 'one build, reported by three processes');
  assert.match(String(info[0]?.labels.commit), /^([0-9a-f]{7,40}(-dirty)?|source)$/);
  const labelValues = after.flatMap((s) => Object.values(s.labels));
  assert.ok(!bogus.some((id) => labelValues.includes(id)), 'no bogus id became a label');

  // Each worker warns about the dead upstream once a window, with the request's id and path.
  const failedLine = JSON.parse(await served.waitForLine(new RegExp(`"req_id":"${failed[0]}".*"msg":"request"`), 5000));
  assert.equal(failedLine.failure, reasons.get(failed[0] as string));
  assert.equal(failedLine.deployment, dead.id);
  const deadWarnings = () => linesOf(served.output(), 'request failed').filter((w) => w.deployment === dead.id);
  const warnings = await waitFor(() => (deadWarnings().length > 0 ? deadWarnings() : null), { what: 'a warning' });
  assert.ok(warnings.length >= 1 && warnings.length <= 4, `${warnings.length} warnings for 10 failures`);
  for (const warning of warnings) {
    assert.ok(failed.includes(String(warning.req_id)));
    assert.match(String(warning.path), new RegExp(`^${dead.runtime_path}/p\\d$`));
    assert.equal(warning.reason, reasons.get(String(warning.req_id)));
  }
});
