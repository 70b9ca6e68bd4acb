/**
 * Several PAIRED federation records between the same two meshgates (a
 * re-pairing while the older one is still up): each mesh request is
 * verified with the key of the record it names in its signed envelope,
 * never the first record found for the peer's cluster id, and never one
 * chosen by Host, SNI or address. Both directions, disconnecting one
 * record, and the attacker who holds one record's key and claims another.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { post, startPeer } from '../../../helpers/federation.ts';
import type { After, TestGateway } from '../../../helpers/gateway.ts';
import { allow, craft, type MeshPair, pairForMesh, reversed } from '../../../helpers/mesh.ts';

const ME = '/api/auth/users/me';
const untrusted = { federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true } };

/** `count` coexisting pairings a → b (fresh PSK each, as the SDK mints one per pair). */
async function pairings(t: After, count: number, options: { hostnames?: string[] } = {}) {
  const a = await startPeer(t, 'ids-a', untrusted);
  const b = await startPeer(t, 'ids-b', options.hostnames ? { ...untrusted, hostnames: options.hostnames } : untrusted);
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
  const admin = await pair.source.request('GET', ME, { token: await pair.source.adminToken() });
  const externalId = `${admin.json.sub}@${pair.sourceClusterId}`;
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

test('three PAIRED records: disconnecting one leaves the other two working both ways', async (t) => {
  const { a, pairs } = await pairings(t, 3);
  const [gone, ...kept] = pairs as [MeshPair, MeshPair, MeshPair];
  for (const pair of [...pairs, ...pairs.map(reversed)]) await allowAdmin(pair);
  for (const [i, pair] of pairs.entries()) await assertAdmittedBy(pair, `record ${i} before the disconnect`);
  const disconnect = await post(a, `/${gone.sourceFedId}/disconnect`);
  assert.equal(disconnect.status, 200, disconnect.text);
  assert.equal(disconnect.json.peer_acknowledged, true, 'the peer found the record by its signature');
  for (const pair of [gone, reversed(gone)]) {
    const res = await meViaMesh(pair);
    assert.equal(res.json.detail.reason, 'mesh_target_not_found', 'a disconnected record is no selector target');
  }
  const stale = await send(gone.receiver, craft(gone, 'GET', ME, { userId: 'someone' }));
  assert.equal(stale.status, 403, stale.text);
  assert.equal(stale.json.detail.reason, 'federation_not_active', 'its own key still names it, and it is not active');
  for (const [i, pair] of kept.entries()) {
    await assertAdmittedBy(pair, `record ${i + 1} after the disconnect`);
    await assertAdmittedBy(reversed(pair), `record ${i + 1} reversed after the disconnect`);
  }
});

test("attacker: record A's key cannot speak as record B, and Host, SNI or address select nothing", async (t) => {
  const { pairs } = await pairings(t, 2, { hostnames: ['ids-b.test', 'ids-b-alias.test'] });
  const [recordA, recordB] = pairs as [MeshPair, MeshPair];
  // Only B admits the admin: any request that lands on A's record is refused by A's (empty) allowlist.
  const externalId = await allowAdmin(recordB);
  const sub = externalId.slice(0, externalId.lastIndexOf('@'));
  const receiver = recordB.receiver;
  // peer_kc with require_peer_jwt: the caller's own token travels along, as egress sends it.
  const peerToken = await recordB.source.adminToken();
  const signed = (record: MeshPair, federationId?: string | null) =>
    craft(record, 'GET', ME, { userId: sub, peerToken, ...(federationId === undefined ? {} : { federationId }) });
  const asB = await send(receiver, signed(recordB), 'ids-b-alias.test');
  assert.equal(asB.status, 200, `B's key naming B is admitted whatever the SNI: ${asB.text}`);
  assert.equal(asB.json.username, externalId);
  // Each row is signed afresh per attempt: a reused nonce would be refused as a replay before anything else.
  const refusals: [string, () => ReturnType<typeof craft>, string, string][] = [
    ["A's key claiming B", () => signed(recordA, recordB.receiverFedId), 'invalid_signature', 'hmac_mismatch'],
    ["B's key claiming A", () => signed(recordB, recordA.receiverFedId), 'invalid_signature', 'hmac_mismatch'],
    ["A's key naming no record", () => signed(recordA, null), 'invalid_signature', 'hardening_missing'],
    ["A's key, an unknown record", () => signed(recordA, randomUUID()), 'invalid_signature', 'unknown_federation'],
    ["A's own record, via B's host and SNI", () => signed(recordA), 'unauthorized_brokered_user', ''],
  ];
  for (const [why, sign, reason, problem] of refusals) {
    for (const servername of ['ids-b.test', 'ids-b-alias.test']) {
      const crafted = sign();
      const res = await send(receiver, { ...crafted, headers: { ...crafted.headers, host: servername } }, servername);
      assert.equal(res.status, 403, `${why} (${servername}): ${res.text}`);
      assert.equal(res.json.detail.reason, reason, why);
      if (problem) assert.equal(res.json.detail.problem, problem, why);
    }
  }
  // The named record must belong to the signed source cluster: a foreign cluster id cannot borrow B's record.
  const foreign = craft({ ...recordB, sourceClusterId: randomUUID() }, 'GET', ME, { userId: sub, peerToken });
  const borrowed = await send(receiver, foreign);
  assert.equal(borrowed.json.detail.problem, 'unknown_federation');
});

async function send(gw: TestGateway, crafted: ReturnType<typeof craft>, servername?: string) {
  const dispatcher = servername ? new Agent({ connect: { ca: gw.gateway.caPem, servername } }) : gw.agent;
  try {
    const url = `https://127.0.0.1:${gw.port}${crafted.path}`;
    const res = await request(url, { method: crafted.method as 'GET', headers: crafted.headers, dispatcher });
    const text = await res.body.text();
    return { status: res.statusCode, text, json: text ? JSON.parse(text) : undefined };
  } finally {
    if (dispatcher !== gw.agent) await dispatcher.close();
  }
}
