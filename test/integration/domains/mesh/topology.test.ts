/**
 * Mesh proxy in peer_kc and across topologies: selectors, redirects, hop loops across three real
 * meshgates, an admin without bypass, and a peer that speaks only the spec
 * envelope (hardening not negotiated).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startPeer } from '../../../helpers/federation.ts';
import type { After } from '../../../helpers/gateway.ts';
import { allow, pairForMesh } from '../../../helpers/mesh.ts';

const untrusted = (extra: object = {}) => ({
  federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true },
  ...extra,
});

async function peerKcPair(t: After, receiverExtra: object = {}) {
  const source = await startPeer(t, 'kc-a', untrusted());
  const receiver = await startPeer(t, 'kc-b', untrusted(receiverExtra));
  return { source, receiver, pair: await pairForMesh(source, receiver, null) };
}

test(
  'peer_kc: the signed identity is trusted, the caller token is checked ' +
    'against the peer realm, admins get no bypass',
  async (t) => {
    const { source, pair } = await peerKcPair(t);
    const admin = await source.request('GET', '/api/auth/users/me', { token: await source.adminToken() });
    await allow(pair, admin.json.sub);
    const token = await source.adminToken();
    const me = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token });
    assert.equal(me.status, 200, me.text);
    assert.deepEqual(me.json.roles, ['admin'], 'source-asserted roles are trusted in peer_kc');
    const adminRoute = await source.request('GET', `/api/mesh/${pair.sourceFedId}/cluster/federations`, { token });
    assert.equal(adminRoute.status, 403);
    assert.equal(adminRoute.json.detail.reason, 'endpoint_requires_native_realm', 'a remote admin is no admin here');
    const selfPat = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/pats`, { token });
    assert.equal(selfPat.json.detail.reason, 'endpoint_requires_native_realm');
    // require_peer_jwt (new peer_kc records): a PAT of the same user validates too, another user's does not get in.
    const pat = await source.request('POST', '/api/auth/pats?scope=openid', { token });
    const viaPat = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
      token: pat.json.token,
    });
    assert.equal(viaPat.status, 200, viaPat.text);
    const bob = await source.userToken('bob');
    const notListed = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token: bob.token });
    assert.equal(notListed.json.detail.reason, 'unauthorized_brokered_user');
  },
);

test('selectors: unknown, local, ambiguous; redirects come back as they are', async (t) => {
  const source = await startPeer(t, 'sel-a', untrusted());
  const b = await startPeer(t, 'sel-b', untrusted());
  const c = await startPeer(t, 'sel-c', untrusted());
  const ab = await pairForMesh(source, b, null, 'east-1');
  await pairForMesh(source, c, null, 'east-2');
  const token = await source.adminToken();
  const call = (selector: string, rest = 'ping') => source.request('GET', `/api/mesh/${selector}/${rest}`, { token });
  assert.equal((await call('east')).json.detail.reason, 'mesh_target_ambiguous');
  assert.equal((await call('east')).status, 409);
  assert.equal((await call('west')).status, 404);
  assert.equal((await call('west')).json.detail.reason, 'mesh_target_not_found');
  assert.equal((await call(ab.sourceClusterId)).status, 400, 'the local cluster id');
  assert.equal((await call(ab.sourceClusterId)).json.detail.reason, 'mesh_target_is_local');
  const ping = await call('east-1');
  assert.equal(ping.status, 200, ping.text);
  assert.equal(ping.json.status, 'pong');
  const query = await call(ab.sourceFedId, 'api/ping?x=1&y=%2F');
  assert.equal(query.status, 200, 'the query is forwarded, not signed');
  const admin = await source.request('GET', '/api/auth/users/me', { token });
  await allow(ab, admin.json.sub);
  const slash = await call('east-1', 'auth/users/me/');
  assert.equal(slash.status, 307, slash.text);
  assert.equal(slash.headers.location, '/api/auth/users/me');
  const disconnect = await b.request('POST', `/api/cluster/federations/${ab.receiverFedId}/disconnect?force=true`, {
    token: await b.adminToken(),
  });
  assert.equal(disconnect.status, 200, disconnect.text);
  const inactive = await call('east-1', 'auth/users/me');
  assert.equal(inactive.status, 403);
  assert.equal(inactive.json.detail.reason, 'federation_not_active');
});

test('a hop loop across three gateways answers 508 and the answer travels back unchanged', async (t) => {
  const a = await startPeer(t, 'loop-a', untrusted());
  const b = await startPeer(t, 'loop-b', untrusted());
  const c = await startPeer(t, 'loop-c', untrusted());
  const ab = await pairForMesh(a, b, null, 'b');
  const bc = await pairForMesh(b, c, null, 'c');
  await pairForMesh(c, a, null, 'a');
  // A multi-hop request carries the first caller's token, which only A's realm signs: no peer JWT past the first hop.
  for (const [gw, pair] of [[c, bc]] as const) {
    const put = await gw.request('PUT', `/api/cluster/federations/${pair.receiverFedId}`, {
      token: await gw.adminToken(),
      json: { require_peer_jwt: false },
    });
    assert.equal(put.status, 200, put.text);
  }
  const token = await a.adminToken();
  const adminSub = (await a.request('GET', '/api/auth/users/me', { token })).json.sub;
  await allow(ab, adminSub);
  const atB = await a.request('GET', '/api/mesh/b/auth/users/me', { token });
  assert.equal(atB.status, 200, atB.text);
  await allow(bc, atB.json.sub);
  const atC = await a.request('GET', '/api/mesh/b/api/mesh/c/api/auth/users/me', { token });
  assert.equal(atC.status, 200, atC.text);
  assert.equal(atC.json.username, `${atB.json.sub}@${bc.sourceClusterId}`, 'C sees B’s brokered user');
  const loop = await a.request('GET', '/api/mesh/b/api/mesh/c/api/mesh/a/api/auth/users/me', { token });
  assert.equal(loop.status, 508, loop.text);
  assert.equal(loop.json.detail.reason, 'mesh_hop_limit_exceeded');
});

test('a peer that offers no hardening keeps the spec envelope and still works', async (t) => {
  const { source, pair } = await peerKcPair(t, { mesh: { features: [] } });
  assert.deepEqual(pair.features, []);
  const me = await source.request('GET', '/api/auth/users/me', { token: await source.adminToken() });
  await allow(pair, me.json.sub);
  const res = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token: await source.adminToken(),
  });
  assert.equal(res.status, 200, res.text);
});
