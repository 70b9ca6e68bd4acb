/**
 * Mesh jobs: two real
 * meshgates paired through the federation API in shared_idp, the real
 * oidc-provider as the shared realm, jobs run by the receiver's real local
 * runtime. Jobs through `/api/mesh/{fed}/cluster/jobs/...`, the local
 * compatibility shim (`target_cluster` / `cluster_selector`), and the
 * allowlist revoke that stops a brokered user's running job.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { post } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';
import { alive, hostPid, MARKER, TERMINAL } from '../../../helpers/jobs.ts';
import { allow, type MeshPair, sharedIdpMesh } from '../../../helpers/mesh.ts';

const EXECUTOR_RECIPE = [{ subject: 'user:{{user_id}}', relation: 'executor', object: 'cluster_jobs:__all__' }];
const ALLOW_ALL = { type: 'kamiwaza.services.authz.gates.default_gates.AllowAllExecutionGate', config: {} };
const markerJob = (probe: string) => `printf '%s\\n' 'plain line' '${MARKER}{"probe":"${probe}"}'`;

/** The shared realm, two paired meshgates, fed-clr-u allowlisted as an executor; returns its shared-realm token. */
async function meshWithExecutor(t: Parameters<typeof sharedIdpMesh>[0]) {
  const mesh = await sharedIdpMesh(t);
  const externalId = await allow(mesh.pair, mesh.oidc.subjectOf('fed-clr-u'), EXECUTOR_RECIPE);
  const token = await mesh.oidc.passwordToken('fed-clr-u', 'pw-u');
  return { ...mesh, externalId, token };
}

async function bindAllowAll(receiver: TestGateway) {
  const res = await receiver.request('PUT', '/api/cluster/execution-gate', {
    token: await receiver.adminToken(),
    json: ALLOW_ALL,
  });
  assert.equal(res.status, 200, res.text);
}

/** Polls `path` on `gw` until `done(body)`; fails with the last answer. */
async function poll(
  gw: TestGateway,
  path: string,
  token: string,
  done: (body: any) => boolean = (b) => TERMINAL.has(b.status),
) {
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    const res = await gw.request('GET', path, { token });
    assert.equal(res.status, 200, res.text);
    if (done(res.json)) return res.json;
    last = res.text;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${path} did not settle; last: ${last}`);
}

function assertBrokered(record: any, pair: MeshPair, localUserId: string) {
  assert.equal(record.source, 'mesh');
  assert.equal(record.source_cluster_id, pair.sourceClusterId, 'the initiator cluster id');
  assert.equal(record.source_cluster_name, 'mesh-a', 'the initiator cluster name, as learnt at pairing');
  assert.equal(record.user_id, localUserId, 'the receiver-local brokered user');
}

test(
  'mesh jobs: every job path through /api/mesh lands on the receiver as ' + 'the brokered user (source=mesh)',
  async (t) => {
    const { pair, source, receiver, externalId, token } = await meshWithExecutor(t);
    const mesh = `/api/mesh/${pair.sourceFedId}/cluster/jobs`;

    const me = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token });
    assert.equal(me.status, 200, me.text);
    assert.deepEqual(
      [me.json.source, me.json.external_id, me.json.source_cluster_id],
      ['mesh', externalId, pair.sourceClusterId],
    );
    const native = await receiver.request('GET', '/api/auth/users/me', { token: await receiver.adminToken() });
    assert.equal(native.json.source, 'local');
    assert.equal(native.json.source_cluster_id, undefined, 'a local caller has no source cluster');

    const gateless = await source.request('POST', `${mesh}/submit`, { token, json: { entrypoint: 'true' } });
    assert.equal(gateless.status, 403, 'mesh submissions are denied until a gate is bound');
    assert.deepEqual(
      [gateless.json.detail.reason, gateless.json.detail.gate],
      ['no_execution_gate_configured_for_mesh', '(unconfigured)'],
    );
    await bindAllowAll(receiver);

    const submitted = await source.request('POST', `${mesh}/submit`, {
      token,
      json: { entrypoint: markerJob('async') },
    });
    assert.equal(submitted.status, 201, submitted.text);
    assert.equal(submitted.json.status, 'PENDING');
    const id = submitted.json.job_id;
    const done = await poll(source, `${mesh}/${id}/status`, token);
    assert.equal(done.status, 'SUCCEEDED', JSON.stringify(done));
    assertBrokered(done, pair, me.json.sub);
    assert.equal(done.audit_actor, externalId);
    const result = await source.request('GET', `${mesh}/${id}/result`, { token });
    const { job_id, status, probe, result: marker, audit_actor } = result.json;
    assert.deepEqual(
      { job_id, status, probe, marker, audit_actor },
      { job_id: id, status: 'SUCCEEDED', probe: 'async', marker: { probe: 'async' }, audit_actor: externalId },
    );
    const logs = await source.request('GET', `${mesh}/${id}/logs`, { token });
    assert.match(logs.json.logs, /plain line/);

    const run = await source.request('POST', `${mesh}/run`, {
      token,
      json: { entrypoint: markerJob('sync'), timeout_seconds: 60 },
    });
    assert.equal(run.status, 200, run.text);
    assert.deepEqual([run.json.status, run.json.result], ['SUCCEEDED', { probe: 'sync' }]);

    const long = await source.request('POST', `${mesh}/submit`, { token, json: { entrypoint: 'sleep 60' } });
    await poll(source, `${mesh}/${long.json.job_id}/status`, token, (b) => b.status === 'RUNNING');
    const cancelled = await source.request('POST', `${mesh}/${long.json.job_id}/cancel`, { token });
    assert.equal(cancelled.json.status, 'STOPPED', cancelled.text);

    const listed = await source.request('GET', `${mesh}/?limit=10`, { token });
    assert.deepEqual(
      new Set(listed.json.map((j: { id: string }) => j.id)),
      new Set([id, run.json.job_id, long.json.job_id]),
    );
    for (const job of listed.json) assertBrokered(job, pair, me.json.sub);
    // Nothing ran on the source.
    assert.deepEqual(
      (await source.request('GET', '/api/cluster/jobs/', { token: await source.adminToken() })).json,
      [],
    );
  },
);

test(
  'forwarding shim: a local submit or run naming the peer is forwarded ' +
    'with the caller token; local polling is proxied',
  async (t) => {
    const { oidc, pair, source, receiver, token } = await meshWithExecutor(t);
    await bindAllowAll(receiver);
    const me = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token });

    // develop SDK: run(target_cluster=X) is a local POST /run.
    const run = await source.request('POST', '/api/cluster/jobs/run', {
      token,
      json: { entrypoint: markerJob('shim-run'), target_cluster: 'receiver-label' },
    });
    assert.equal(run.status, 200, run.text);
    assert.deepEqual(
      [run.json.status, run.json.result, run.json.cluster_selector],
      ['SUCCEEDED', { probe: 'shim-run' }, 'receiver-label'],
    );
    assert.match(String(run.headers['x-kz-mesh-correlation-id']), /^[0-9a-f-]{36}$/);

    // recoverable=True: local submit, then local status/result polling (the shadow proxies them).
    const submitted = await source.request('POST', '/api/cluster/jobs/submit', {
      token,
      json: { entrypoint: markerJob('shim-async'), cluster_selector: pair.receiverClusterId, unknown_field: 1 },
    });
    assert.equal(submitted.status, 201, submitted.text);
    assert.equal(submitted.json.cluster_selector, pair.receiverClusterId);
    const id = submitted.json.job_id;
    const done = await poll(source, `/api/cluster/jobs/${id}/status`, token);
    assert.equal(done.status, 'SUCCEEDED', JSON.stringify(done));
    assertBrokered(done, pair, me.json.sub);
    assert.equal(done.cluster_selector, 'local', 'the peer got no selector: it ran the job itself');
    const shimResult = (await source.request('GET', `/api/cluster/jobs/${id}/result`, { token })).json;
    assert.deepEqual(
      [shimResult.job_id, shimResult.status, shimResult.probe, shimResult.result],
      [id, 'SUCCEEDED', 'shim-async', { probe: 'shim-async' }],
    );
    assert.match((await source.request('GET', `/api/cluster/jobs/${id}/logs`, { token })).json.logs, /plain line/);

    const long = await source.request('POST', '/api/cluster/jobs/submit', {
      token,
      json: { entrypoint: 'sleep 60', target_cluster: 'receiver-label' },
    });
    await poll(source, `/api/cluster/jobs/${long.json.job_id}/status`, token, (b) => b.status === 'RUNNING');
    const cancelled = await source.request('POST', `/api/cluster/jobs/${long.json.job_id}/cancel`, { token });
    assert.equal(cancelled.json.status, 'STOPPED', cancelled.text);
    const onReceiver = await receiver.request('GET', `/api/cluster/jobs/${long.json.job_id}/status`, {
      token: await receiver.adminToken(),
    });
    assert.equal(onReceiver.json.status, 'STOPPED', 'the peer really stopped it');

    // The shadow belongs to its submitter; peer refusals come back as they are.
    const other = await oidc.passwordToken('fed-clr-s', 'pw-s');
    const foreign = await source.request('GET', `/api/cluster/jobs/${id}/status`, { token: other });
    assert.equal(foreign.status, 401, 'not the shadow owner: a shared-realm token is no local credential');
    const nativeUser = await source.userToken('native-bob');
    assert.equal(
      (await source.request('GET', `/api/cluster/jobs/${id}/status`, { token: nativeUser.token })).json.detail.reason,
      'job_not_found',
    );
    const refused = await source.request('POST', '/api/cluster/jobs/submit', {
      token: other,
      json: { entrypoint: 'true', target_cluster: 'receiver-label' },
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.detail.reason, 'unauthorized_brokered_user');
    // A shared-realm token is good for forwarding only, never for jobs of the source itself.
    const localWithShared = await source.request('POST', '/api/cluster/jobs/submit', {
      token,
      json: { entrypoint: 'true' },
    });
    assert.equal(localWithShared.status, 401);
    assert.deepEqual(
      (await source.request('GET', '/api/cluster/jobs/', { token: await source.adminToken() })).json,
      [],
    );
  },
);

test('allowlist revoke with cancel_in_flight_jobs=true stops the brokered user’s running job', async (t) => {
  const { pair, source, receiver, externalId, token } = await meshWithExecutor(t);
  await bindAllowAll(receiver);
  const mesh = `/api/mesh/${pair.sourceFedId}/cluster/jobs`;
  const long = await source.request('POST', `${mesh}/submit`, {
    token,
    json: { entrypoint: 'echo $$ > job.pid; exec sleep 300' },
  });
  assert.equal(long.status, 201, long.text);
  const id = long.json.job_id;
  const pidFile = join(receiver.dataDir, 'jobs', id, 'work', 'job.pid');
  await poll(
    source,
    `${mesh}/${id}/status`,
    token,
    (b) => b.status === 'RUNNING' && existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'),
  );
  const pid = hostPid(id, Number(readFileSync(pidFile, 'utf8')));
  assert.ok(alive(pid), "the brokered user's job is running on the receiver");

  const revoked = await post(
    receiver,
    `/${pair.receiverFedId}/users/${encodeURIComponent(externalId)}/revoke?cancel_in_flight_jobs=true`,
  );
  assert.equal(revoked.status, 200, revoked.text);
  assert.equal(revoked.json.cancelled_jobs, 1);
  const admin = await receiver.adminToken();
  const record = await poll(receiver, `/api/cluster/jobs/${id}/status`, admin, (b) => b.ended_at !== null);
  assert.equal(record.status, 'STOPPED');
  assert.equal(record.timed_out, false);
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(alive(pid), false, 'the process is gone, not only the record');
  const after = await source.request('GET', `${mesh}/${id}/status`, { token });
  assert.equal(after.json.detail.reason, 'revoked_brokered_user');
});
