/**
 * Upstream health and request counts under `meshgate serve --workers 2`: the
 * primary probes, the workers proxy, and every worker answers the same figures
 * (the table's): the requests proxied by both workers, a live upstream
 * healthy and a dead one unhealthy with its reason.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEAD_UPSTREAM, startAppServer } from '../../../helpers/upstreams.ts';
import { adminToken, connection, servedBy, workersScratch } from '../../../helpers/workers.ts';

test('with two workers, each reads the primary-probed health and the requests both workers proxied', async (t) => {
  const { dir, serve } = workersScratch(t, 'meshgate-health-');
  const app = await startAppServer(t);
  const served = await serve(2, { PLATFORM_UPSTREAM_HEALTH_INTERVAL_MS: '200' }, join(dir, 'data'));
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

  // One connection per request: the kernel spreads connections over the workers; both must have proxied some.
  const REQUESTS = 12;
  const proxiedBy = new Set<number>();
  for (let i = 0; i < REQUESTS; i++) {
    const conn = connection(served);
    const res = await conn.call('GET', `${live.runtime_path}/dashboard`, { token });
    await conn.close();
    assert.equal(res.status, 200, res.text);
    proxiedBy.add(await servedBy(served, res.requestId));
  }

  // Each worker must answer the whole count and both results, within a bounded wait.
  const readers = new Set<number>();
  const deadline = Date.now() + 30_000;
  while (readers.size < 2) {
    assert.ok(Date.now() < deadline, `not every worker read the figures (${[...readers]})`);
    const conn = connection(served);
    const [one, other] = [
      await conn.call('GET', `/api/serving/deployments/${live.id}`, { token }),
      await conn.call('GET', `/api/serving/deployments/${dead.id}`, { token }),
    ];
    await conn.close();
    const settled =
      one.json.traffic.requests === REQUESTS &&
      one.json.health.status === 'healthy' &&
      other.json.health.status === 'unhealthy';
    if (settled) {
      assert.equal(other.json.health.reason, 'upstream_unreachable');
      readers.add(await servedBy(served, other.requestId));
    } else await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.equal(proxiedBy.size, 2, 'both workers proxied requests, and each counts them all');
});
