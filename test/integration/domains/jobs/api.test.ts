import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { executorToken, submit, waitFor } from '../../../helpers/jobs.ts';

const JOBS = '/api/cluster/jobs';

test('submitting needs cluster_jobs:__all__#executor: 403 rebac_denied, admins bypass', async (t) => {
  const gw = await startTestGateway(t);
  const plain = await gw.userToken('plain');
  const refused = await submit(gw, plain.token, { entrypoint: 'echo hi' });
  assert.equal(refused.status, 403);
  assert.deepEqual(
    { reason: refused.json.detail.reason, relation: refused.json.detail.relation, object: refused.json.detail.object },
    { reason: 'rebac_denied', relation: 'executor', object: 'cluster_jobs:__all__' },
  );
  const run = await gw.request('POST', `${JOBS}/run`, { token: plain.token, json: { entrypoint: 'echo hi' } });
  assert.equal(run.status, 403);
  const admin = await submit(gw, await gw.adminToken(), { entrypoint: 'echo hi' });
  assert.equal(admin.status, 201);
  const executor = await executorToken(gw, 'exec');
  assert.equal((await submit(gw, executor.token, { entrypoint: 'echo hi' })).status, 201);
  const anonymous = await submit(gw, null, { entrypoint: 'echo hi' });
  assert.equal(anonymous.status, 401);
});

test('bad requests are 422 lists and record nothing', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const bad: Record<string, unknown>[] = [
    {},
    { entrypoint: '   ' },
    { entrypoint: 'x', timeout_seconds: 0 },
    { entrypoint: 'x', timeout_seconds: 86401 },
    { entrypoint: 'x', timeout_seconds: 1.5 },
    { entrypoint: 'x', metadata: { a: 1 } },
    { entrypoint: 'x', runtime_env: { env_vars: { 'BAD-NAME': 'v' } } },
    { entrypoint: 'x', runtime_env: { env_vars: { A: 1 } } },
    { entrypoint: 'x', delegated_access: {} },
    { entrypoint: 'x', delegated_access: { datasets: [{ urn: 'urn:li:dataset:*', operations: ['retrieve'] }] } },
    { entrypoint: 'x', delegated_access: { datasets: [{ urn: 's3://bucket', operations: ['retrieve'] }] } },
    { entrypoint: 'x', delegated_access: { datasets: [{ urn: 'urn:li:dataset:(a,b,PROD)', operations: [] }] } },
    {
      entrypoint: 'x',
      delegated_access: { datasets: [{ urn: 'urn:li:dataset:(a,b,PROD)', operations: ['read', 'read'] }] },
    },
    { entrypoint: 'x', delegated_access: { datasets: [{ urn: 'urn:li:dataset:(a,b,PROD)', operations: ['delete'] }] } },
    { entrypoint: 'x', delegated_access: { models: [{ deployment_id: 'not-a-uuid', operations: ['chat'] }] } },
    {
      entrypoint: 'x',
      delegated_access: {
        datasets: Array.from({ length: 65 }, (_, i) => ({ urn: `urn:li:dataset:${i}`, operations: ['read'] })),
      },
    },
    { entrypoint: 'x', python_packages: ['humanize>=4'] },
    { entrypoint: 'x', python_packages: ['humanize[extra]==4.13.0'] },
    { entrypoint: 'x', python_packages: ['humanize==4.13.0; python_version>"3"'] },
    { entrypoint: 'x', python_packages: ['https://example.com/humanize.whl'] },
    { entrypoint: 'x', python_packages: ['humanize'] },
    { entrypoint: 'x', python_packages: ['Humanize==1.0', 'humanize==2.0'] },
    { entrypoint: 'x', python_packages: Array.from({ length: 33 }, (_, i) => `p${i}==1.0`) },
  ];
  for (const json of bad) {
    const res = await submit(gw, token, json);
    assert.equal(res.status, 422, JSON.stringify(json));
    assert.ok(Array.isArray(res.json.detail) && res.json.detail[0].loc[0] === 'body', res.text);
  }
  const malformed = await gw.request('POST', `${JOBS}/submit`, {
    token,
    body: '{nope',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(malformed.status, 422);
  const badId = await gw.request('GET', `${JOBS}/not-a-uuid/status`, { token });
  assert.equal(badId.status, 422);
  assert.deepEqual(badId.json.detail[0].loc, ['path', 'job_id']);
  assert.deepEqual((await gw.request('GET', `${JOBS}/`, { token })).json, []);
});

test('delegated_access and unknown fields: validated, stored, echoed; extras ignored', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const delegated = {
    datasets: [{ urn: 'urn:li:dataset:(urn:li:dataPlatform:file,demo,PROD)', operations: ['discover', 'retrieve'] }],
    models: [{ deployment_id: '7d1c1b0e-52a4-4b1f-9a55-0c8e1f0f6d11', operations: ['chat'] }],
  };
  const res = await submit(gw, token, {
    entrypoint: 'true',
    delegated_access: delegated,
    remote_admin_token: 'ignored',
    cluster_selector: 'local',
  });
  assert.equal(res.status, 201, res.text);
  const status = await gw.request('GET', `${JOBS}/${res.json.id}/status`, { token });
  assert.deepEqual(status.json.delegated_access, delegated);
});

test(
  'a selector other than local is sent through the mesh; target_cluster ' + 'is its alias; nothing runs here',
  async (t) => {
    const gw = await startTestGateway(t);
    const token = await gw.adminToken();
    for (const json of [
      { entrypoint: 'true', cluster_selector: 'peer-cluster' },
      { entrypoint: 'true', target_cluster: 'peer-cluster' },
    ]) {
      for (const path of ['submit', 'run']) {
        const res = await gw.request('POST', `${JOBS}/${path}`, { token, json });
        assert.equal(res.status, 404, 'no PAIRED federation answers to that selector');
        assert.equal(res.json.detail.reason, 'mesh_target_not_found');
        assert.equal(res.json.detail.selector, 'peer-cluster');
      }
    }
    assert.deepEqual((await gw.request('GET', `${JOBS}/`, { token })).json, []);
    const local = await submit(gw, token, { entrypoint: 'true', target_cluster: 'local' });
    assert.equal(local.status, 201);
    assert.equal(local.json.cluster_selector, 'local');
  },
);

test('jobs are private: another user gets 404 job_not_found everywhere; admins see all', async (t) => {
  const gw = await startTestGateway(t);
  const alice = await executorToken(gw, 'alice');
  const bob = await executorToken(gw, 'bob');
  const job = await submit(gw, alice.token, { entrypoint: 'sleep 30' });
  for (const [method, suffix] of [
    ['GET', 'status'],
    ['GET', 'result'],
    ['GET', 'logs'],
    ['POST', 'cancel'],
  ] as const) {
    const res = await gw.request(method, `${JOBS}/${job.json.id}/${suffix}`, { token: bob.token });
    assert.equal(res.status, 404, suffix);
    assert.equal(res.json.detail.reason, 'job_not_found');
  }
  const unknown = await gw.request('GET', `${JOBS}/00000000-0000-4000-8000-000000000000/status`, {
    token: alice.token,
  });
  assert.equal(unknown.status, 404);
  const admin = await gw.request('POST', `${JOBS}/${job.json.id}/cancel`, { token: await gw.adminToken() });
  assert.equal(admin.status, 200);
  assert.equal(admin.json.status, 'STOPPED');
});

test('list: newest first, own jobs only for non-admins, paging, trailing slash', async (t) => {
  const gw = await startTestGateway(t);
  const alice = await executorToken(gw, 'alice');
  const bob = await executorToken(gw, 'bob');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await submit(gw, alice.token, { entrypoint: `echo ${i}` })).json.id);
  const bobs = (await submit(gw, bob.token, { entrypoint: 'echo bob' })).json.id;
  const mine = await gw.request('GET', `${JOBS}/`, { token: alice.token });
  assert.equal(mine.status, 200);
  assert.deepEqual(
    mine.json.map((j: { id: string }) => j.id),
    [...ids].reverse(),
  );
  assert.ok(
    mine.json.every((j: { metadata_: unknown; user_id: string }) => 'metadata_' in j && j.user_id === alice.id),
  );
  const page = await gw.request('GET', `${JOBS}/?limit=1&offset=1`, { token: alice.token });
  assert.deepEqual(
    page.json.map((j: { id: string }) => j.id),
    [ids[1]],
  );
  const all = await gw.request('GET', `${JOBS}/`, { token: await gw.adminToken() });
  assert.deepEqual(all.json[0].id, bobs);
  assert.equal(all.json.length, 4);
  const noSlash = await gw.request('GET', JOBS, { token: alice.token });
  assert.equal(noSlash.status, 307);
  assert.equal((await gw.request('GET', `${JOBS}/?limit=0`, { token: alice.token })).status, 422);
  for (const id of [...ids, bobs]) await waitFor(gw, await gw.adminToken(), id);
});

test('an unreachable runtime: submit answers 503 job_runtime_unavailable and records nothing', async (t) => {
  // Nothing listens on the discard port.
  const gw = await startTestGateway(t, {
    jobs: { runtime: 'ray', ray: { dashboardUrl: 'http://127.0.0.1:9', requestTimeoutMs: 2000 } },
  });
  const token = await gw.adminToken();
  for (const path of ['submit', 'run']) {
    const res = await gw.request('POST', `${JOBS}/${path}`, { token, json: { entrypoint: 'true' } });
    assert.deepEqual(
      [res.status, res.json.detail.reason, res.json.detail.runtime],
      [503, 'job_runtime_unavailable', 'ray'],
    );
    assert.ok(!res.text.includes('ECONNREFUSED'), 'no internals in the answer');
  }
  assert.deepEqual((await gw.request('GET', `${JOBS}/`, { token })).json, []);
});
