/**
 * Several PAIRED federation records between the same two meshgates (a
 * re-pairing while the older one is still up): each mesh request is
 * verified with the key of the record it names in its signed envelope,
 * never the first record found for the peer's cluster id, and never one
 * chosen by Host, SNI or address. Both directions, disconnecting one
 * record, and the attacker who holds one record's key and claims another.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { MESH } from '../../gateway/mesh/headers.ts';
import { post, startPeer } from '../helpers/federation.ts';
import type { After, TestGateway } from '../helpers/gateway.ts';
import { allow, craft, type MeshPair, pairForMesh } from '../helpers/mesh.ts';

const ME = '/api/auth/users/me';
const untrusted = { federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true } };

/** The same pairing seen from the receiver: it becomes the source of the reverse direction. */
function reversed(pair: MeshPair): MeshPair {
  return {
    ...pair,
    source: pair.receiver,
    receiver: pair.source,
    sourceFedId: pair.receiverFedId,
    receiverFedId: pair.sourceFedId,
    sourceClusterId: pair.receiverClusterId,
    receiverClusterId: pair.sourceClusterId,
  };
}

/** `count` coexisting pairings a → b (fresh PSK each, as the SDK mints one per pair). */
async function pairings(t: After, count: number, options: { hostnames?: string[] } = {}) {
  const a = await startPeer(t, 'ids-a', untrusted);
  const b = await startPeer(t, 'ids-b', { ...untrusted, ...(options.hostnames ? { hostnames: options.hostnames } : {}) });
  const pairs: MeshPair[] = [];
  for (let i = 0; i < count; i++) pairs.push(await pairForMesh(a, b, null, `b-${i}`));
  return { a, b, pairs };
}

/** Calls /auth/users/me on the pair's receiver through the source's mesh egress, as the source admin. */
async function meViaMesh(pair: MeshPair) {
  return pair.source.request('GET', `/api/mesh/${pair.sourceFedId}${ME}`, { token: await pair.source.adminToken() });
}

async function allowAdmin(pair: MeshPair): Promise<string> {
  const me = await pair.source.request('GET', ME, { token: await pair.source.adminToken() });
  return allow(pair, me.json.sub);
}

/** The brokered user each record admits is its own: the allowlist of the record that verified. */
async function assertAdmittedBy(pair: MeshPair, why: string) {
  const externalId = `${(await pair.source.request('GET', ME, { token: await pair.source.adminToken() })).json.sub}@${pair.sourceClusterId}`;
  const res = await meViaMesh(pair);
  assert.equal(res.status, 200, `${why}: ${res.text}`);
  assert.equal(res.json.username, externalId, why);
}

test('two PAIRED records between the same gateways: each verifies with its own key, in both directions', async (t) => {
  const { pairs } = await pairings(t, 2);
  const [older, newer] = pairs as [MeshPair, MeshPair];
  for (const pair of pairs) await allowAdmin(pair);
  await assertAdmittedBy(older, 'the older record');
  await assertAdmittedBy(newer, 'the newer record while the older one is still PAIRED');
  for (const pair of pairs.map(reversed)) await allowAdmin(pair);
  await assertAdmittedBy(reversed(older), 'reverse direction, older record');
  await assertAdmittedBy(reversed(newer), 'reverse direction, newer record');
});

