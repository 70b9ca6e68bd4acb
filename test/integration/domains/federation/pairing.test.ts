import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AUTHZ } from '../../../../domains/authz/index.ts';
import { FEDERATIONS } from '../../../../domains/federation/index.ts';
import {
  createRecord,
  getRecord,
  newPsk,
  pairGateways,
  post,
  routeTo,
  startPeer,
} from '../../../helpers/federation.ts';

test('full pairing: CA exchange, both records PAIRED, signed ping both ways, PSK never shown', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const { initiatorId, receiverId, psk, paired } = await pairGateways(a, b);
  const idA = a.gateway.deps.services.get(FEDERATIONS).localClusterId;
  const idB = b.gateway.deps.services.get(FEDERATIONS).localClusterId;
  assert.notEqual(idA, idB);

  assert.equal(paired.status, 'PAIRED');
  assert.equal(paired.remote_cluster_id, idB);
  assert.equal(paired.remote_cluster_name, 'receiver-label', 'the initiator keeps its operator label');
  assert.ok(paired.last_ping);
  const onB = await getRecord(b, receiverId);
  assert.equal(onB.status, 'PAIRED');
  assert.equal(onB.remote_cluster_id, idA);
  assert.equal(
    onB.remote_cluster_name,
    'fed-a',
    "the receiver's label is overwritten with the initiator's cluster name",
  );
  assert.deepEqual(onB.remote_ips, [routeTo(a)], 'the receiver learned how to reach the initiator');
  assert.equal(onB.identity_mode, 'shared_idp');
  assert.equal(onB.trust_posture, 'receiver_controlled_shared');
  assert.equal(onB.grandfathered, false);
  assert.ok(
    paired.peer_ca_fingerprint && onB.peer_ca_fingerprint && paired.peer_ca_fingerprint !== onB.peer_ca_fingerprint,
  );

  for (const [gw, id, peerId] of [
    [a, initiatorId, idB],
    [b, receiverId, idA],
  ] as const) {
    const ping = await post(gw, `/${id}/ping`);
    assert.equal(ping.status, 200, ping.text);
    assert.equal(ping.json.federation_id, id);
    assert.equal(ping.json.reachable, true);
    assert.equal(ping.json.remote_cluster_id, peerId);
  }
  // Seeded relation: the admin who paired operates the record.
  const admin = (await a.request('GET', '/api/auth/users/me', { token: await a.adminToken() })).json.sub;
  const tuples = a.gateway.deps.services.get(AUTHZ).list({ objectNs: 'federation', objectId: initiatorId });
  assert.ok(tuples.some((x) => x.subjectId === admin && x.relation === 'operator'));

  for (const gw of [a, b]) {
    const list = await gw.request('GET', '/api/cluster/federations', { token: await gw.adminToken() });
    assert.ok(!list.text.includes(psk), 'the PSK is never returned');
    assert.ok(!gw.logs.join('').includes(psk), 'the PSK is never logged');
  }
});

test('wrong PSK: the initiator answers hmac_signature_invalid and both sides stay unpaired', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const r = await createRecord(b, { remote_cluster_name: 'a', role: 'receiver', preshared_key: newPsk() });
  const i = await createRecord(a, {
    remote_cluster_name: 'b',
    role: 'initiator',
    remote_ips: [routeTo(b)],
    preshared_key: newPsk(),
  });
  assert.equal(r.status, 'WAITING');
  assert.equal(i.status, 'PAIRING');
  const res = await post(a, `/${i.id}/pair`);
  assert.equal(res.status, 502);
  assert.equal(res.json.detail.reason, 'hmac_signature_invalid');
  assert.equal((await getRecord(a, i.id)).status, 'PAIRING');
  assert.equal((await getRecord(b, r.id)).status, 'WAITING');
  assert.equal((await getRecord(b, r.id)).remote_cluster_id, null);
  const ping = await post(a, `/${i.id}/ping`);
  assert.equal(ping.status, 409);
  assert.equal(ping.json.detail.reason, 'federation_not_paired');
});

test('clock difference of 60 s or more refuses pairing with clock_skew; both stay unpaired', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b', {}, { now: () => new Date(Date.now() + 90_000) });
  const psk = newPsk();
  const r = await createRecord(b, { remote_cluster_name: 'a', role: 'receiver', preshared_key: psk });
  const i = await createRecord(a, {
    remote_cluster_name: 'b',
    role: 'initiator',
    remote_ips: [routeTo(b)],
    preshared_key: psk,
  });
  const res = await post(a, `/${i.id}/pair`);
  assert.equal(res.status, 502, res.text);
  assert.equal(res.json.detail.reason, 'clock_skew');
  assert.equal(res.json.detail.peer_reason, 'pairing_clock_skew');
  assert.ok(Math.abs(res.json.detail.skew_seconds) >= 60);
  assert.equal((await getRecord(a, i.id)).status, 'PAIRING');
  assert.equal((await getRecord(b, r.id)).status, 'WAITING');
});

test('pairing is initiator-only and once: receiver records and PAIRED records refuse /pair', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const { initiatorId, receiverId } = await pairGateways(a, b);
  const again = await post(a, `/${initiatorId}/pair`);
  assert.equal(again.status, 409);
  assert.equal(again.json.detail.reason, 'federation_already_paired');
  const onReceiver = await createRecord(b, { remote_cluster_name: 'x', role: 'receiver', preshared_key: newPsk() });
  const wrongRole = await post(b, `/${onReceiver.id}/pair`);
  assert.equal(wrongRole.status, 409);
  assert.equal(wrongRole.json.detail.reason, 'federation_state_conflict');
  assert.equal(wrongRole.json.detail.role, 'receiver');
  assert.equal((await getRecord(b, receiverId)).status, 'PAIRED');
});

test('a route back to this cluster is refused as peer_identity_aliases_local', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const psk = newPsk();
  await createRecord(a, { remote_cluster_name: 'me', role: 'receiver', preshared_key: psk });
  const i = await createRecord(a, {
    remote_cluster_name: 'me-too',
    role: 'initiator',
    remote_ips: [routeTo(a)],
    preshared_key: psk,
  });
  const res = await post(a, `/${i.id}/pair`);
  assert.equal(res.status, 409, res.text);
  assert.equal(res.json.detail.reason, 'peer_identity_aliases_local');
  const pre = await post(a, '/preflight', { remote_ips: [routeTo(a)] });
  assert.equal(pre.status, 200);
  assert.equal(pre.json.ok, false);
  assert.equal(pre.json.reason, 'peer_identity_aliases_local');
});

test('two WAITING receivers with the same PSK: psk_ambiguous, nothing paired', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const psk = newPsk();
  const r1 = await createRecord(b, { remote_cluster_name: 'a1', role: 'receiver', preshared_key: psk });
  const r2 = await createRecord(b, { remote_cluster_name: 'a2', role: 'receiver', preshared_key: psk });
  const i = await createRecord(a, {
    remote_cluster_name: 'b',
    role: 'initiator',
    remote_ips: [routeTo(b)],
    preshared_key: psk,
  });
  const res = await post(a, `/${i.id}/pair`);
  assert.equal(res.status, 409, res.text);
  assert.equal(res.json.detail.reason, 'psk_ambiguous');
  for (const id of [r1.id, r2.id]) assert.equal((await getRecord(b, id)).status, 'WAITING');
});

test('three clusters: two initiators pair with one receiver; each pairing is independent', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const c = await startPeer(t, 'fed-c');
  const ab = await pairGateways(a, b);
  const cb = await pairGateways(c, b);
  const paired = await b.request('GET', '/api/cluster/federations?status=PAIRED', { token: await b.adminToken() });
  assert.deepEqual(paired.json.map((r: { remote_cluster_name: string }) => r.remote_cluster_name).sort(), [
    'fed-a',
    'fed-c',
  ]);
  const disconnect = await post(a, `/${ab.initiatorId}/disconnect`);
  assert.equal(disconnect.status, 200, disconnect.text);
  assert.equal((await getRecord(b, ab.receiverId)).status, 'DISCONNECTED');
  assert.equal((await getRecord(b, cb.receiverId)).status, 'PAIRED');
  assert.equal((await post(c, `/${cb.initiatorId}/ping`)).json.reachable, true);
});
