import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AUTHZ } from '../../../../domains/authz/index.ts';
import { JOBS } from '../../../../domains/jobs/index.ts';
import { DEFAULT_TENANT, type Principal } from '../../../../gateway/principal.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { executorToken, MARKER } from '../../../helpers/jobs.ts';

const GATE = '/api/cluster/execution-gate';
const ALLOW_ALL = 'kamiwaza.services.authz.gates.default_gates.AllowAllExecutionGate';
const ALLOW_ALL_ALIAS = 'platform.gates.default_gates.AllowAllExecutionGate';

test('execution gate endpoints: not_configured, bind under both class paths, refusals, delete', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const user = await gw.userToken('someone');
  const none = await gw.request('GET', GATE, { token: user.token });
  assert.equal(none.status, 404);
  assert.equal(none.json.detail.reason, 'not_configured');
  assert.equal(
    (await gw.request('PUT', GATE, { token: user.token, json: { type: ALLOW_ALL, config: {} } })).status,
    403,
  );
  const notAllowed = await gw.request('PUT', GATE, { token: admin, json: { type: 'os.system', config: {} } });
  assert.deepEqual([notAllowed.status, notAllowed.json.detail.reason], [403, 'classpath_not_allowed']);
  const unimportable = await gw.request('PUT', GATE, {
    token: admin,
    json: { type: 'platform.gates.default_gates.Nope', config: {} },
  });
  assert.deepEqual([unimportable.status, unimportable.json.detail.reason], [404, 'classpath_unimportable']);
  const badConfig = await gw.request('PUT', GATE, {
    token: admin,
    json: { type: ALLOW_ALL, config: { strict: true } },
  });
  assert.deepEqual([badConfig.status, badConfig.json.detail.reason], [400, 'gate_config_invalid']);
  assert.equal((await gw.request('PUT', GATE, { token: admin, json: { config: {} } })).status, 422);
  for (const type of [ALLOW_ALL, ALLOW_ALL_ALIAS]) {
    const put = await gw.request('PUT', GATE, { token: admin, json: { type, config: {} } });
    assert.equal(put.status, 200);
    assert.deepEqual(put.json, { type, config: {}, gate_name: 'allow_all_execution_gate', kind: 'execution' });
    assert.deepEqual((await gw.request('GET', GATE, { token: user.token })).json, put.json);
  }
  assert.equal((await gw.request('DELETE', GATE, { token: user.token })).status, 403);
  const del = await gw.request('DELETE', GATE, { token: admin });
  assert.deepEqual([del.status, del.json], [200, { deleted: true, previous_type: ALLOW_ALL_ALIAS }]);
  assert.equal((await gw.request('DELETE', GATE, { token: admin })).status, 404);
});

/** A receiver-local brokered user as the mesh ingress will hand it to services (gateway/principal.ts). */
function meshPrincipal(
  gw: TestGateway,
  userId: string,
  cluster: { id: string; name: string },
  grant = true,
): Principal {
  if (grant) {
    gw.gateway.deps.services.get(AUTHZ).write([
      {
        subject: { namespace: 'user', id: userId },
        relation: 'executor',
        object: { namespace: 'cluster_jobs', id: '__all__' },
      },
    ]);
  }
  return {
    userId,
    username: `brokered-${userId.slice(0, 8)}`,
    email: null,
    roles: ['admin'],
    attributes: { clearance: 'U' },
    tenantId: DEFAULT_TENANT,
    source: 'mesh',
    authMethod: 'mesh',
    externalId: `src-user@${cluster.id}`,
    sourceClusterId: cluster.id,
    sourceClusterName: cluster.name,
  };
}

const EAST = { id: '11111111-1111-4111-8111-111111111111', name: 'east' };
const WEST = { id: '22222222-2222-4222-8222-222222222222', name: 'west' };

test(
  'mesh submissions: denied until a gate is bound, then recorded with ' + 'source=mesh and the source cluster',
  async (t) => {
    const gw = await startTestGateway(t);
    const jobs = gw.gateway.deps.services.get(JOBS);
    const east = meshPrincipal(gw, '33333333-3333-4333-8333-333333333333', EAST);
    await assert.rejects(
      jobs.submit(east, { entrypoint: 'true' }),
      (e: { status: number; reason: string; extra: { gate: string } }) => {
        assert.deepEqual(
          [e.status, e.reason, e.extra.gate],
          [403, 'no_execution_gate_configured_for_mesh', '(unconfigured)'],
        );
        return true;
      },
    );
    const ungranted = meshPrincipal(gw, '44444444-4444-4444-8444-444444444444', EAST, false);
    await assert.rejects(jobs.submit(ungranted, { entrypoint: 'true' }), { reason: 'rebac_denied' });
    const local = await executorToken(gw, 'local-user');
    assert.equal(
      (await gw.request('POST', '/api/cluster/jobs/submit', { token: local.token, json: { entrypoint: 'true' } }))
        .status,
      201,
    );

    await gw.request('PUT', GATE, { token: await gw.adminToken(), json: { type: ALLOW_ALL, config: {} } });
    const run = await jobs.run(east, { entrypoint: `echo '${MARKER}{"from":"mesh"}'` });
    assert.equal(run.status, 'SUCCEEDED');
    assert.deepEqual(run.result, { from: 'mesh' });
    assert.equal(run.audit_actor, `src-user@${EAST.id}`);
    const record = await jobs.status(east, run.id);
    assert.deepEqual(
      [record.source, record.source_cluster_id, record.source_cluster_name, record.user_id],
      ['mesh', EAST.id, 'east', east.userId],
    );

    // A mesh caller sees only its own source cluster's jobs; the admin role it carries grants nothing.
    const westSameUser = meshPrincipal(gw, east.userId, WEST);
    await assert.rejects(jobs.status(westSameUser, run.id), { reason: 'job_not_found' });
    assert.deepEqual(await jobs.list(westSameUser, { limit: 100, offset: 0 }), []);
    assert.deepEqual(
      (await jobs.list(east, { limit: 100, offset: 0 })).map((j) => j.id),
      [run.id],
    );
    const localView = await gw.request('GET', `/api/cluster/jobs/${run.id}/status`, { token: local.token });
    assert.equal(localView.status, 404);
    const adminView = await gw.request('GET', `/api/cluster/jobs/${run.id}/status`, { token: await gw.adminToken() });
    assert.equal(adminView.json.source, 'mesh');
  },
);

test('cancelActiveJobsOf stops every active job of a user and leaves others alone', async (t) => {
  const gw = await startTestGateway(t, { jobs: { local: { maxConcurrent: 1 } } });
  const jobs = gw.gateway.deps.services.get(JOBS);
  const target = await executorToken(gw, 'revoked');
  const other = await executorToken(gw, 'other');
  const ids = [];
  for (let i = 0; i < 2; i++) {
    ids.push(
      (await gw.request('POST', '/api/cluster/jobs/submit', { token: target.token, json: { entrypoint: 'sleep 30' } }))
        .json.id,
    );
  }
  const done = await gw.request('POST', '/api/cluster/jobs/run', {
    token: target.token,
    json: { entrypoint: 'true', timeout_seconds: 1 },
  });
  const keep = (
    await gw.request('POST', '/api/cluster/jobs/submit', { token: other.token, json: { entrypoint: 'sleep 30' } })
  ).json.id;
  assert.equal(await jobs.cancelActiveJobsOf(target.id), 2);
  for (const id of ids)
    assert.equal(
      (await gw.request('GET', `/api/cluster/jobs/${id}/status`, { token: target.token })).json.status,
      'STOPPED',
    );
  assert.equal(
    (await gw.request('GET', `/api/cluster/jobs/${done.json.id}/status`, { token: target.token })).json.status,
    'STOPPED',
  );
  assert.notEqual(
    (await gw.request('GET', `/api/cluster/jobs/${keep}/status`, { token: other.token })).json.status,
    'STOPPED',
  );
  assert.equal(await jobs.cancelActiveJobsOf(target.id), 0);
  await gw.request('POST', `/api/cluster/jobs/${keep}/cancel`, { token: other.token });
});
