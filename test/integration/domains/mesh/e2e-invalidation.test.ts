/**
 * The mesh read cache (domains/federation/memo.ts) keeps behaviour
 * identical: with every lookup warm, each write — revoke, restore,
 * brokering off, disconnect on either side, delete — is seen by the very
 * next request: a cache must never let a revoked caller through.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { post } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';
import { allow, craft, sharedIdpMesh } from '../../../helpers/mesh.ts';

async function warm(source: TestGateway, path: string, token: string): Promise<string> {
  let sub = '';
  for (let i = 0; i < 3; i++) {
    const res = await source.request('GET', path, { token });
    assert.equal(res.status, 200, res.text);
    sub = res.json.sub;
  }
  return sub;
}

async function expectRefusal(
  source: TestGateway,
  path: string,
  token: string,
  status: number,
  reason: string,
): Promise<void> {
  const res = await source.request('GET', path, { token });
  assert.equal(res.status, status, res.text);
  assert.equal(res.json.detail.reason, reason);
}

test('with every lookup cached, revoke, restore and brokering changes apply to the very next request', async (t) => {
  const { oidc, pair, source, receiver } = await sharedIdpMesh(t);
  const externalId = await allow(pair, oidc.subjectOf('fed-clr-u'));
  const token = await oidc.passwordToken('fed-clr-u', 'pw-u');
  const path = `/api/mesh/${pair.sourceFedId}/auth/users/me`;
  const sub = await warm(source, path, token);

  assert.equal(
    (await post(receiver, `/${pair.receiverFedId}/users/${encodeURIComponent(externalId)}/revoke`)).status,
    200,
  );
  await expectRefusal(source, path, token, 403, 'revoked_brokered_user');
  assert.equal(
    (await post(receiver, `/${pair.receiverFedId}/users/${encodeURIComponent(externalId)}/restore`, {})).status,
    200,
  );
  assert.equal(await warm(source, path, token), sub, 'restored: the same local user');

  const admin = await receiver.adminToken();
  const off = await receiver.request('PUT', `/api/cluster/federations/${pair.receiverFedId}`, {
    token: admin,
    json: { brokering_enabled: false },
  });
  assert.equal(off.status, 200, off.text);
  await expectRefusal(source, path, token, 403, 'brokering_required_for_receiver_controlled');
  await receiver.request('PUT', `/api/cluster/federations/${pair.receiverFedId}`, {
    token: admin,
    json: { brokering_enabled: true },
  });
  await warm(source, path, token);

  // A newly listed user gets in at once: a cached "not listed" is dropped by the write.
  const strangerToken = await oidc.passwordToken('fed-clr-s', 'pw-s');
  await expectRefusal(source, path, strangerToken, 403, 'unauthorized_brokered_user');
  await allow(pair, oidc.subjectOf('fed-clr-s'));
  await warm(source, path, strangerToken);
});

test('with every lookup cached, disconnect on either side and delete apply to the very next request', async (t) => {
  const { oidc, pair, source, receiver } = await sharedIdpMesh(t);
  await allow(pair, oidc.subjectOf('fed-clr-u'));
  const token = await oidc.passwordToken('fed-clr-u', 'pw-u');
  const path = `/api/mesh/${pair.sourceFedId}/auth/users/me`;
  const sub = await warm(source, path, token);

  // The receiver alone disconnects (force: no peer notice), the source still signs as PAIRED.
  assert.equal((await post(receiver, `/${pair.receiverFedId}/disconnect?force=true`)).status, 200);
  await expectRefusal(source, path, token, 403, 'federation_not_active');

  // The source disconnects too: its PAIRED list no longer holds the peer, nor the CA its shared realm's keys were
  // fetched through, so the caller's token is verified again, through the trust left (the system's), and refused;
  // a native caller finds no target.
  assert.equal((await post(source, `/${pair.sourceFedId}/disconnect?force=true`)).status, 200);
  assert.equal((await source.request('GET', path, { token })).status, 401);
  await expectRefusal(source, path, await source.adminToken(), 404, 'mesh_target_not_found');

  // Deleted on the receiver: a request signed with the old PSK finds no record to verify against.
  const signed = craft(pair, 'GET', '/api/auth/users/me', { userId: sub, peerToken: token });
  const before = await receiver.request('GET', signed.path, { headers: signed.headers });
  assert.equal(
    before.json.detail.reason,
    'federation_not_active',
    'the disconnected record still verifies the signature',
  );
  const del = await receiver.request('DELETE', `/api/cluster/federations/${pair.receiverFedId}`, {
    token: await receiver.adminToken(),
  });
  assert.equal(del.status, 200, del.text);
  const again = craft(pair, 'GET', '/api/auth/users/me', { userId: sub, peerToken: token });
  const after = await receiver.request('GET', again.path, { headers: again.headers });
  assert.equal(after.status, 403, after.text);
  assert.equal(after.json.detail.reason, 'invalid_signature');
});
