/**
 * The data plane in the artifact, `meshgate serve --workers 2`: a deployment's replicas balanced by both workers,
 * a replica killed with SIGKILL costing no GET on either, and a caller's rate limit held across the two workers
 * (connections spread over them by the kernel), exactly: the shared bucket never admits more than its burst.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runMeshgate } from '../../../helpers/cli.ts';
import { startReplica } from '../../../helpers/replicas.ts';
import { adminToken, connection, type Served, servedBy, workersScratch } from '../../../helpers/workers.ts';

/** One request on a connection of its own, so the kernel spreads them over the workers. */
async function once(served: Served, path: string, token: string) {
  const conn = connection(served);
  try {
    return await conn.call('GET', path, { token });
  } finally {
    await conn.close();
  }
}

test('two workers balance replicas, fail over without a failed GET, and share one rate limit', async (t) => {
  const { dir, serve } = workersScratch(t, 'meshgate-dataplane-');
  const [a, b] = await Promise.all([startReplica(t, 'a'), startReplica(t, 'b')]);
  const served = await serve(2, {}, join(dir, 'data'));
  const token = await adminToken(served);
  const admin = connection(served);
  t.after(() => admin.close());
  const create = async (body: Record<string, unknown>) => {
    const res = await admin.call('POST', '/api/serving/deployments', { token, json: { kind: 'model', ...body } });
    assert.equal(res.status, 201, res.text);
    return res.json as { id: string; runtime_path: string };
  };
  const upstreams = [{ url: a.url }, { url: b.url }];
  const spread = await create({ name: 'spread', upstreams });
  const limited = await create({ name: 'limited', upstreams, rate_limit: { requests_per_second: 0.001, burst: 20 } });

  const answeredBy = new Set<string>();
  const workers = new Set<number>();
  for (let i = 0; i < 16; i++) {
    const res = await once(served, `${spread.runtime_path}/who`, token);
    assert.equal(res.status, 200, res.text);
    answeredBy.add(res.json);
    workers.add(await servedBy(served, res.requestId));
  }
  assert.deepEqual([...answeredBy].sort(), ['a', 'b'], 'both replicas took traffic');
  assert.equal(workers.size, 2, 'through both workers');

  await b.kill();
  for (let i = 0; i < 30; i++) {
    const res = await once(served, `${spread.runtime_path}/who`, token);
    assert.deepEqual([res.status, res.json], [200, 'a'], 'a GET to the killed replica went to the live one');
  }

  const statuses: number[] = [];
  for (let i = 0; i < 40; i++) statuses.push((await once(served, `${limited.runtime_path}/who`, token)).status);
  assert.equal(statuses.filter((s) => s === 200).length, 20, 'the burst, across both workers, and not one more');
  assert.equal(statuses.filter((s) => s === 429).length, 20);

  // The same from the console: replicas with weights and the data-plane options, picked up by the running gateway.
  const added = await runMeshgate([
    'deploy',
    'add',
    '--data-dir',
    join(dir, 'data'),
    '--kind',
    'app',
    '--name',
    'from-cli',
    '--upstream',
    `${a.url}=3`,
    '--upstream',
    b.url,
    '--affinity',
    'cookie',
    '--rate-limit',
    '5:10',
  ]);
  assert.equal(added.code, 0, added.out);
  const record = JSON.parse(added.out);
  assert.deepEqual(record.upstreams, [
    { url: a.url, weight: 3 },
    { url: b.url, weight: 1 },
  ]);
  assert.deepEqual([record.affinity, record.rate_limit], ['cookie', { requests_per_second: 5, burst: 10 }]);
  const viaCli = await once(served, `${record.runtime_path}/who`, token);
  assert.deepEqual([viaCli.status, viaCli.json], [200, 'a']);
});
