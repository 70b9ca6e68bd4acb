/**
 * `/metrics` under `serve --workers 2` as deployments come and go: a deleted deployment's request series
 * (`meshgate_http_request_duration_seconds`) leave the scrape — from every worker that served it, whichever process
 * took the delete, and from what the workers replaced by a reload left in the primary's sum — so create/delete churn
 * does not grow the scrape. The deployments that stay keep theirs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { parsePrometheus, type Sample, total } from '../../../helpers/peers/prometheus.ts';
import { startAppServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { adminToken, connection, freePort, type Served, servedBy, workersScratch } from '../../../helpers/workers.ts';

async function scrape(adminUrl: string): Promise<Sample[]> {
  const res = await request(`${adminUrl}/metrics`);
  assert.equal(res.statusCode, 200);
  return parsePrometheus(await res.body.text());
}

const COUNT = 'meshgate_http_request_duration_seconds_count';
const seriesOf = (samples: readonly Sample[], deployment: string) =>
  samples.filter((s) => s.labels.deployment === deployment);

/** New connections until both workers have answered a GET of `path`; how many were sent. */
async function fromBothWorkers(served: Served, token: string, path: string): Promise<number> {
  const workers = new Set<number>();
  let sent = 0;
  while (workers.size < 2) {
    assert.ok(sent < 40, 'both workers served a connection');
    const conn = connection(served);
    const res = await conn.call('GET', path, { token });
    await conn.close();
    assert.equal(res.status, 200, res.text);
    sent++;
    workers.add(await servedBy(served, res.requestId));
  }
  return sent;
}

test('two workers: a deleted deployment leaves the scrape, a reload then a delete too', async (t) => {
  const { dir, serve } = workersScratch(t, 'meshgate-churn-');
  const app = await startAppServer(t);
  const served = await serve(2, { PLATFORM_ADMIN_PORT: String(await freePort()) });
  const { admin } = JSON.parse(await served.waitForLine(/"msg":"primary started/)) as { admin: string };
  const token = await adminToken(served);
  const conn = connection(served);
  t.after(() => conn.close());
  const create = async (name: string) => {
    const created = await conn.call('POST', '/api/serving/deployments', {
      token,
      json: { kind: 'app', name, upstream: app.url },
    });
    assert.equal(created.status, 201, created.text);
    return created.json as { id: string; runtime_path: string };
  };
  const remove = async (id: string) =>
    assert.equal((await conn.call('DELETE', `/api/serving/deployments/${id}`, { token })).status, 204);

  const gone = await create('gone');
  const kept = await create('kept');
  const sentToGone = await fromBothWorkers(served, token, `${gone.runtime_path}/dashboard`);
  const sentToKept = await fromBothWorkers(served, token, `${kept.runtime_path}/dashboard`);
  const before = await scrape(admin);
  assert.equal(total(before, COUNT, { deployment: gone.id }), sentToGone, 'both workers counted `gone`');

  // Deleted through one worker: the other hears of it by the change feed, as it hears that the plane goes.
  await remove(gone.id);
  await waitFor(async () => seriesOf(await scrape(admin), gone.id).length === 0, {
    intervalMs: 250,
    what: "`gone`'s series to leave every worker's registry",
  });
  assert.equal(total(await scrape(admin), COUNT, { deployment: kept.id }), sentToKept, '`kept` keeps its series');

  // The workers that served `kept` replaced: their last figures stay in the sum until `kept` is deleted.
  await execMeshgate(['reload', '--data-dir', dir]);
  await served.waitForLine(/^meshgate reloaded \(2 workers replaced\)$/);
  assert.equal(total(await scrape(admin), COUNT, { deployment: kept.id }), sentToKept, 'a reload keeps the sum');
  await remove(kept.id);
  await waitFor(async () => seriesOf(await scrape(admin), kept.id).length === 0, {
    intervalMs: 250,
    what: "`kept`'s series to leave the primary's sum of the replaced workers",
  });
});
