/**
 * `meshgate serve --workers 2`: a deployment deleted through one worker (the other hears it on the change feed) or
 * by the CLI (neither worker wrote it) is released by both: its upstream's keep-alive connections, one per worker,
 * close, while the surviving deployment's stay open and in use, and its series leave the combined /metrics.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { runMeshgate } from '../../../helpers/cli.ts';
import { parsePrometheus } from '../../../helpers/peers/prometheus.ts';
import { startCountingServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { adminToken, connection, freePort, type Served, workersScratch } from '../../../helpers/workers.ts';

/** A GET on a connection of its own, so the kernel spreads them over the workers; answers its status. */
async function getAlone(served: Served, path: string, token: string): Promise<number> {
  const conn = connection(served);
  try {
    const res = await conn.client.request({ method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
    await res.body.dump();
    return res.statusCode;
  } finally {
    await conn.close();
  }
}

/** Requests until both workers opened a connection to the upstream. */
async function throughBothWorkers(served: Served, path: string, token: string, upstream: { open: number }) {
  for (let sent = 0; upstream.open < 2; sent++) {
    assert.ok(sent < 60, 'both workers proxied to the upstream');
    assert.equal(await getAlone(served, path, token), 200);
  }
}

/** The deployments with an `upstream_*` series in the combined metrics. */
async function withSeries(adminUrl: string): Promise<Set<string>> {
  const res = await request(`${adminUrl}/metrics`);
  const samples = await parsePrometheus(await res.body.text());
  return new Set(samples.filter((s) => s.name.startsWith('meshgate_upstream_')).map((s) => s.labels.deployment ?? ''));
}

test('two workers release a deleted deployment: through either worker or by the CLI', async (t) => {
  const { dir, serve } = workersScratch(t, 'meshgate-plane-release-');
  const [a, b, c] = [await startCountingServer(t), await startCountingServer(t), await startCountingServer(t)];
  const served = await serve(2, { PLATFORM_ADMIN_PORT: String(await freePort()) }, join(dir, 'data'));
  const { admin: adminUrl } = JSON.parse(await served.waitForLine(/"msg":"primary started/)) as { admin: string };
  const token = await adminToken(served);
  const admin = connection(served);
  t.after(() => admin.close());
  const create = async (name: string, upstream: string) => {
    const res = await admin.call('POST', '/api/serving/deployments', { token, json: { kind: 'app', name, upstream } });
    assert.equal(res.status, 201, res.text);
    return res.json as { id: string; runtime_path: string };
  };
  const viaApi = await create('via-api', a.url);
  const viaCli = await create('via-cli', c.url);
  const kept = await create('kept', b.url);
  for (const [app, upstream] of [
    [viaApi, a],
    [viaCli, c],
    [kept, b],
  ] as const)
    await throughBothWorkers(served, `${app.runtime_path}/quick`, token, upstream);
  assert.deepEqual([a.open, b.open, c.open], [2, 2, 2], 'one connection per worker to each upstream');
  const listed = await withSeries(adminUrl);
  assert.ok(listed.has(viaApi.id) && listed.has(viaCli.id) && listed.has(kept.id), [...listed].join());

  assert.equal((await admin.call('DELETE', `/api/serving/deployments/${viaApi.id}`, { token })).status, 204);
  await waitFor(() => a.open === 0, { what: "both workers to close their connections to `via-api`'s upstream" });
  const removed = await runMeshgate(['deploy', 'remove', viaCli.id, '--data-dir', join(dir, 'data')]);
  assert.equal(removed.code, 0, removed.out);
  await waitFor(() => c.open === 0, { what: "both workers to close their connections to `via-cli`'s upstream" });

  const acceptedByB = b.accepted;
  for (let i = 0; i < 6; i++) assert.equal(await getAlone(served, `${kept.runtime_path}/quick`, token), 200);
  assert.deepEqual([b.open, b.accepted], [2, acceptedByB], "`kept`'s connections stay open, and in use");
  await waitFor(
    async () => {
      const left = await withSeries(adminUrl);
      return !left.has(viaApi.id) && !left.has(viaCli.id) && left.has(kept.id);
    },
    { what: 'the deleted deployments to leave the metrics of both workers' },
  );
});
