/**
 * Catalog through the mesh, end to end (the receiver alone decides:
 * allowlist, then per-resource ReBAC): on a receiver
 * with several datasets, a shared-realm user allowlisted with a viewer
 * recipe on one of them lists exactly that one through
 * /api/mesh/{fed}/catalog/datasets/, reads it, and gets 404 for the others.
 * A remote admin — a shared-realm persona with admin role claims, or the
 * source's native admin in peer_kc — gets no bypass either.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startPeer } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';
import { allow, PERSONAS, pairForMesh, sharedIdpMesh } from '../../../helpers/mesh.ts';
import { createDataset } from '../../../helpers/retrieval.ts';

const viewerOf = (urn: string) => [{ subject: 'user:{{user_id}}', relation: 'viewer', object: `dataset:${urn}` }];

/** Four datasets owned by the receiver's admin; returns their URNs. */
async function seedDatasets(receiver: TestGateway): Promise<string[]> {
  const admin = await receiver.adminToken();
  const urns: string[] = [];
  for (const name of ['orders', 'customers', 'secret-ledger', 'mesh/demo (v2)']) {
    urns.push(await createDataset(receiver, admin, { name, platform: 'file', properties: { path: `/srv/${name}` } }));
  }
  return urns;
}

const names = (list: { urn: string }[]) => list.map((d) => d.urn).sort();

async function assertSeesOnly(
  source: TestGateway,
  fed: string,
  token: string,
  granted: string,
  all: string[],
): Promise<void> {
  const listed = await source.request('GET', `/api/mesh/${fed}/catalog/datasets/`, { token });
  assert.equal(listed.status, 200, listed.text);
  assert.deepEqual(names(listed.json), [granted], 'exactly the granted dataset, out of several');
  const read = await source.request('GET', `/api/mesh/${fed}/catalog/datasets/v2/${encodeURIComponent(granted)}`, {
    token,
  });
  assert.equal(read.status, 200, read.text);
  assert.equal(read.json.urn, granted);
  for (const urn of all.filter((u) => u !== granted)) {
    for (const path of [
      `catalog/datasets/v2/${encodeURIComponent(urn)}`,
      `catalog/datasets/by-urn?urn=${encodeURIComponent(urn)}`,
    ]) {
      const res = await source.request('GET', `/api/mesh/${fed}/${path}`, { token });
      assert.equal(res.status, 404, `${path}: ${res.text}`);
      assert.deepEqual(res.json, { detail: 'Dataset not found' });
    }
  }
  const patch = await source.request('PATCH', `/api/mesh/${fed}/catalog/datasets/v2/${encodeURIComponent(granted)}`, {
    token,
    json: { description: 'mesh edit' },
  });
  assert.equal(patch.status, 403, 'viewer may not patch');
  assert.equal(patch.json.detail.reason, 'rebac_denied');
}

test('shared_idp: a viewer-recipe user lists exactly its granted remote dataset; others answer 404', async (t) => {
  const { oidc, pair, source, receiver } = await sharedIdpMesh(t);
  const urns = await seedDatasets(receiver);
  const granted = urns[3] as string;
  assert.equal(
    (await receiver.request('GET', '/api/catalog/datasets/', { token: await receiver.adminToken() })).json.length,
    4,
    'the receiver holds several datasets',
  );
  await allow(pair, oidc.subjectOf('fed-clr-u'), viewerOf(granted));
  const token = await oidc.passwordToken('fed-clr-u', 'pw-u');
  await assertSeesOnly(source, pair.sourceFedId, token, granted, urns);

  const query = await source.request('GET', `/api/mesh/${pair.sourceFedId}/catalog/datasets/?query=orders`, { token });
  assert.deepEqual(query.json, [], 'a query matching only non-granted datasets lists nothing');
  const create = await source.request('POST', `/api/mesh/${pair.sourceFedId}/catalog/datasets/`, {
    token,
    json: { name: 'from-mesh', platform: 'file', properties: {} },
  });
  assert.equal(create.status, 403);
  assert.equal(create.json.detail.reason, 'endpoint_requires_native_realm');

  // Another allowlisted user without a recipe sees nothing at all.
  await allow(pair, oidc.subjectOf('fed-clr-s'));
  const bare = await source.request('GET', `/api/mesh/${pair.sourceFedId}/catalog/datasets/`, {
    token: await oidc.passwordToken('fed-clr-s', 'pw-s'),
  });
  assert.equal(bare.status, 200, bare.text);
  assert.deepEqual(bare.json, []);
});

test('shared_idp: a persona whose token claims admin roles gets no bypass on the remote catalog', async (t) => {
  const personas = [
    ...PERSONAS,
    { username: 'fed-admin', password: 'pw-a', claims: { roles: ['admin'], realm_access: { roles: ['admin'] } } },
  ];
  const { oidc, pair, source, receiver } = await sharedIdpMesh(t, { personas });
  const urns = await seedDatasets(receiver);
  await allow(pair, oidc.subjectOf('fed-admin'), viewerOf(urns[0] as string));
  const token = await oidc.passwordToken('fed-admin', 'pw-a');
  const me = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token });
  assert.deepEqual(me.json.roles, [], 'shared_idp drops every asserted role');
  await assertSeesOnly(source, pair.sourceFedId, token, urns[0] as string, urns);
  const containers = await source.request('GET', `/api/mesh/${pair.sourceFedId}/catalog/containers/`, { token });
  assert.equal(containers.status, 403);
  assert.equal(containers.json.detail.reason, 'endpoint_requires_native_realm');
});

test(
  'peer_kc: the source native admin, role admin signed and trusted, ' + 'still sees only what the receiver granted',
  async (t) => {
    const untrusted = { federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true } };
    const source = await startPeer(t, 'cat-a', untrusted);
    const receiver = await startPeer(t, 'cat-b', untrusted);
    const pair = await pairForMesh(source, receiver, null);
    const urns = await seedDatasets(receiver);
    const token = await source.adminToken();
    const admin = await source.request('GET', '/api/auth/users/me', { token });
    await allow(pair, admin.json.sub, viewerOf(urns[1] as string));
    const me = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token });
    assert.deepEqual(me.json.roles, ['admin'], 'the signed admin role is taken in peer_kc');
    await assertSeesOnly(source, pair.sourceFedId, token, urns[1] as string, urns);
    const del = await source.request(
      'DELETE',
      `/api/mesh/${pair.sourceFedId}/catalog/datasets/v2/${encodeURIComponent(urns[2] as string)}`,
      { token },
    );
    assert.equal(del.status, 404, 'no admin bypass for delete either');
    assert.equal(
      (await receiver.request('GET', '/api/catalog/datasets/', { token: await receiver.adminToken() })).json.length,
      4,
    );
  },
);
