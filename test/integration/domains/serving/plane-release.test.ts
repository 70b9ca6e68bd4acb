/**
 * A deployment's data plane lives as long as the deployment: deleted, its upstream's keep-alive connections close
 * (unless another deployment shares that origin, whose requests keep using them) and its series leave the metrics,
 * the kernel's request histogram included; moved to another upstream, the old origin's connections close.
 * Connections are counted on the upstream servers themselves, which keep idle connections open for as long as the
 * gateway does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { parsePrometheus, type Sample } from '../../../helpers/peers/prometheus.ts';
import { deploy, startCountingServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';

const METRICS_TOKEN = 'metrics-token-for-tests-0123456789';

async function scrape(gw: TestGateway): Promise<Sample[]> {
  const res = await request(`${gw.gateway.adminUrl}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return parsePrometheus(await res.body.text());
}

/** The metric names that have a series of `deployment`. */
function namesOf(samples: readonly Sample[], deployment: string): string[] {
  return [...new Set(samples.filter((s) => s.labels.deployment === deployment).map((s) => s.name))].sort();
}

test('a deleted deployment releases its pools and series; a shared origin stays; a moved one goes', async (t) => {
  const [a, b, c] = [await startCountingServer(t), await startCountingServer(t), await startCountingServer(t)];
  const gw = await startTestGateway(t, {
    admin: { port: 0, metricsToken: METRICS_TOKEN },
    serving: { healthIntervalMs: 60_000 },
  });
  const token = await gw.adminToken();
  const rateLimit = { requests_per_second: 0.001, burst: 4 };
  const gone = await deploy(gw, { kind: 'app', name: 'gone', upstream: a.url, rate_limit: rateLimit });
  const sibling = await deploy(gw, { kind: 'app', name: 'sibling', upstream: a.url });
  const kept = await deploy(gw, { kind: 'app', name: 'kept', upstream: b.url });
  const get = (app: { runtime_path: string }, rest: string) =>
    gw.request('GET', `${app.runtime_path}${rest}`, { token });

  // Three requests held at once open three connections to `a`, two to `b`; released, they stay open, idle.
  const flood = [get(gone, '/held'), get(gone, '/held'), get(gone, '/held'), get(kept, '/held'), get(kept, '/held')];
  await waitFor(() => a.held === 3 && b.held === 2, { what: 'the held requests upstream' });
  a.release();
  b.release();
  for (const res of await Promise.all(flood)) assert.equal(res.status, 200, res.text);
  assert.equal((await get(gone, '/quick')).status, 200);
  assert.equal((await get(gone, '/quick')).status, 429, 'beyond the burst: counted under upstream_errors_total');
  assert.equal((await get(sibling, '/quick')).status, 200);
  assert.deepEqual([a.open, a.accepted, b.open], [3, 3, 2], '`sibling` shares the pool of `a`, and its connections');
  await waitFor(async () => namesOf(await scrape(gw), gone.id).includes('meshgate_upstream_healthy'), {
    what: 'the first probe of `gone`',
  });
  assert.deepEqual(namesOf(await scrape(gw), gone.id), [
    'meshgate_http_request_duration_seconds_bucket',
    'meshgate_http_request_duration_seconds_count',
    'meshgate_http_request_duration_seconds_sum',
    'meshgate_upstream_errors_total',
    'meshgate_upstream_healthy',
    'meshgate_upstream_pool_connections',
    'meshgate_upstream_replica_ejected',
    'meshgate_upstream_replica_in_rotation',
    'meshgate_upstream_requests_in_flight',
    'meshgate_upstream_requests_queued',
    'meshgate_upstream_requests_total',
  ]);

  // `sibling` shares `a`'s origin, so its pool: deleting `gone` leaves the connections to `sibling`.
  assert.equal((await gw.request('DELETE', `/api/serving/deployments/${gone.id}`, { token })).status, 204);
  await waitFor(async () => namesOf(await scrape(gw), gone.id).length === 0, {
    what: "`gone`'s series to leave the metrics",
  });
  const afterDelete = await scrape(gw);
  // The kernel's request histogram (gateway/observability/request.ts) lets go of it too: churn does not grow a scrape.
  assert.deepEqual(namesOf(afterDelete, gone.id), []);
  assert.ok(namesOf(afterDelete, kept.id).includes('meshgate_http_request_duration_seconds_count'), 'others stay');
  const poolOfA = afterDelete.filter(
    (s) => s.name === 'meshgate_upstream_pool_connections' && s.labels.state === 'connected',
  );
  assert.deepEqual(
    poolOfA.map((s) => [s.labels.deployment, s.value]).sort(),
    [
      [kept.id, 2],
      [sibling.id, 3],
    ].sort(),
    "`a`'s pool, still open, is now reported under the deployment that uses it",
  );
  assert.equal((await get(gone, '/quick')).status, 404);
  const acceptedByA = a.accepted;
  for (let i = 0; i < 3; i++) assert.equal((await get(sibling, '/quick')).status, 200);
  assert.deepEqual([a.open, a.accepted], [3, acceptedByA], '`sibling` reuses the connections `gone` opened');

  // The last user of `a` deleted: its connections close, and `b`'s, whose deployment lives, stay.
  assert.equal((await gw.request('DELETE', `/api/serving/deployments/${sibling.id}`, { token })).status, 204);
  await waitFor(() => a.open === 0, { what: "`a`'s connections to close" });
  const acceptedByB = b.accepted;
  assert.equal((await get(kept, '/quick')).status, 200);
  assert.deepEqual([b.open, b.accepted], [2, acceptedByB], '`kept` still uses its idle connections');

  // `kept` moved to `c`: the pool of `b` goes as soon as this process hears of the change, not at the next request.
  const moved = await gw.request('PATCH', `/api/serving/deployments/${kept.id}`, { token, json: { upstream: c.url } });
  assert.equal(moved.status, 200, moved.text);
  await waitFor(() => b.open === 0, { what: "`b`'s connections to close" });
  assert.equal((await get(kept, '/quick')).status, 200);
  assert.equal(c.open, 1, 'the next request went to `c`');
});
