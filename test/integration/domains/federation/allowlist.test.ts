import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BROKERED_JOB_CANCELLER, FEDERATIONS } from '../../../../domains/federation/index.ts';
import { createRecord, newPsk, startPeer } from '../../../helpers/federation.ts';

const URN = 'urn:li:dataset:(urn:li:dataPlatform:file,/srv/docs,PROD)';
const RECIPE = [
  { subject: 'user:{{user_id}}', relation: 'viewer', object: `dataset:${URN}` },
  { subject: 'user:{{user_id}}', relation: 'executor', object: 'cluster_jobs:__all__' },
];

test('allowlist: add, 409 on repeat, list, revoke, restore with a replacement recipe', async (t) => {
  const b = await startPeer(t, 'fed-b');
  const token = await b.adminToken();
  const rec = await createRecord(b, { remote_cluster_name: 'a', role: 'receiver', preshared_key: newPsk() });
  const base = `/api/cluster/federations/${rec.id}/users`;
  const externalId = `${crypto.randomUUID()}@${crypto.randomUUID()}`;
  const added = await b.request('POST', base, { token, json: { external_id: externalId, initial_tuples: RECIPE } });
  assert.equal(added.status, 201, added.text);
  assert.deepEqual(
    { ...added.json, created_at: 'x', updated_at: 'x' },
    {
      federation_id: rec.id,
      external_id: externalId,
      initial_tuples: RECIPE,
      auto_provisioned: false,
      local_user_id: null,
      created_at: 'x',
      updated_at: 'x',
      disabled_at: null,
    },
  );
  const repeat = await b.request('POST', base, { token, json: { external_id: externalId } });
  assert.equal(repeat.status, 409);
  assert.equal(repeat.json.detail.reason, 'federation_user_exists');
  const bare = await b.request('POST', base, { token, json: { external_id: 'cdr-baker@lyra-uuid' } });
  assert.equal(bare.status, 201);
  assert.deepEqual(bare.json.initial_tuples, []);
  const list = await b.request('GET', base, { token });
  assert.deepEqual(
    list.json.map((e: { external_id: string }) => e.external_id),
    [externalId, 'cdr-baker@lyra-uuid'],
  );

  const encoded = encodeURIComponent(externalId);
  const revoked = await b.request('POST', `${base}/${encoded}/revoke?cancel_in_flight_jobs=true`, { token });
  assert.equal(revoked.status, 200, revoked.text);
  assert.ok(revoked.json.disabled_at);
  assert.equal(revoked.json.cancelled_jobs, 0, 'never provisioned: no jobs to cancel');
  const newRecipe = [{ subject: 'user:{{user_id}}', relation: 'owner', object: 'dataset:{{external_id}}' }];
  const restored = await b.request('POST', `${base}/${encoded}/restore`, {
    token,
    json: { initial_tuples: newRecipe },
  });
  assert.equal(restored.status, 200, restored.text);
  assert.equal(restored.json.disabled_at, null);
  assert.deepEqual(restored.json.initial_tuples, newRecipe);
  const keep = await b.request('POST', `${base}/${encoded}/restore`, { token });
  assert.deepEqual(keep.json.initial_tuples, newRecipe, 'restore without a body keeps the recipe');
  const unknown = await b.request('POST', `${base}/nobody%40nowhere/revoke`, { token });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.json.detail.reason, 'federation_user_not_found');
  const noRecord = await b.request('GET', `/api/cluster/federations/${crypto.randomUUID()}/users`, { token });
  assert.equal(noRecord.json.detail.reason, 'federation_not_found');
});

test('recipes are validated against the ReBAC model at add and restore time', async (t) => {
  const b = await startPeer(t, 'fed-b');
  const token = await b.adminToken();
  const rec = await createRecord(b, { remote_cluster_name: 'a', role: 'receiver', preshared_key: newPsk() });
  const base = `/api/cluster/federations/${rec.id}/users`;
  const bad = await b.request('POST', base, {
    token,
    json: {
      external_id: 'u@c',
      initial_tuples: [
        { subject: 'user:{{user_id}}', relation: 'viewer', object: 'spaceship:x' },
        { subject: 'user:{{user_id}}', relation: 'pilot', object: `dataset:${URN}` },
        { subject: 'user:{{user_id}}', relation: 'executor', object: 'cluster_jobs:everything' },
        { subject: 'cluster:ORION', relation: 'viewer', object: `dataset:${URN}` },
        { subject: 'user:{{user_id}}', relation: 'viewer', object: 'dataset' },
      ],
    },
  });
  assert.equal(bad.status, 422);
  assert.deepEqual(
    bad.json.detail.map((p: { loc: (string | number)[]; type: string }) => [p.loc.slice(2).join('.'), p.type]),
    [
      ['0.object', 'namespace_unsupported'],
      ['1.relation', 'relation_unsupported'],
      ['2.object', 'object_id_invalid'],
      ['3.subject', 'subject_invalid'],
      ['4.object', 'namespace_unsupported'],
    ],
  );
  assert.equal((await b.request('GET', base, { token })).json.length, 0, 'nothing stored');
  assert.equal((await b.request('POST', base, { token, json: { external_id: 'no-at-sign' } })).status, 422);
  await b.request('POST', base, { token, json: { external_id: 'u@c' } });
  const restore = await b.request('POST', `${base}/u%40c/restore`, {
    token,
    json: { initial_tuples: [{ subject: 'user:x', relation: 'viewer', object: 'nope:1' }] },
  });
  assert.equal(restore.status, 422);
});

test(
  'mesh ingress lookups: entry by external_id, provisioning mark, ' + 'rendered recipe, job-cancel hook provided',
  async (t) => {
    const b = await startPeer(t, 'fed-b');
    const token = await b.adminToken();
    const rec = await createRecord(b, { remote_cluster_name: 'a', role: 'receiver', preshared_key: newPsk() });
    const externalId = 'sub-1@cluster-a';
    await b.request('POST', `/api/cluster/federations/${rec.id}/users`, {
      token,
      json: { external_id: externalId, initial_tuples: RECIPE },
    });
    const directory = b.gateway.deps.services.get(FEDERATIONS);
    const entry = directory.allowlistEntry(rec.id, externalId);
    assert.ok(entry);
    const localUser = crypto.randomUUID();
    const marked = directory.markProvisioned(rec.id, externalId, localUser);
    assert.deepEqual([marked.auto_provisioned, marked.local_user_id], [true, localUser]);
    assert.deepEqual(directory.renderEntryTuples(marked, localUser), [
      {
        subject: { namespace: 'user', id: localUser },
        relation: 'viewer',
        object: { namespace: 'dataset', id: URN },
        tenantId: '__default__',
      },
      {
        subject: { namespace: 'user', id: localUser },
        relation: 'executor',
        object: { namespace: 'cluster_jobs', id: '__all__' },
        tenantId: '__default__',
      },
    ]);
    assert.ok(directory.psk(rec.id), 'the PSK is reachable in process as a KeyObject');
    assert.equal(
      directory.isTrustedSharedIssuer('https://idp.test/realms/federation'),
      false,
      'an empty trusted-issuer list trusts none',
    );

    // The jobs domain provides the revoke hook; this user has no jobs (stopping real ones: domains/mesh/jobs.test.ts).
    assert.ok(b.gateway.deps.services.find(BROKERED_JOB_CANCELLER), 'the jobs domain provides the job canceller');
    const revoked = await b.request(
      'POST',
      `/api/cluster/federations/${rec.id}/users/${encodeURIComponent(externalId)}/revoke?cancel_in_flight_jobs=true`,
      {
        token,
      },
    );
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal(revoked.json.cancelled_jobs, 0);
    assert.ok(revoked.json.disabled_at);
  },
);

test('PLATFORM_TRUSTED_SHARED_ISSUERS decides which shared issuers mesh ingress may trust', async (t) => {
  const b = await startPeer(t, 'fed-b', {
    federation: { trustedSharedIssuers: ['https://idp.test/realms/federation/'], peerTimeoutMs: 3000 },
  });
  const directory = b.gateway.deps.services.get(FEDERATIONS);
  assert.equal(directory.isTrustedSharedIssuer('https://idp.test/realms/federation'), true);
  assert.equal(directory.isTrustedSharedIssuer('https://evil.test/realms/federation'), false);
});
