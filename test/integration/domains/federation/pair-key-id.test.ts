/**
 * /remote/pair is unauthenticated until its signature verifies, so what a call costs must not grow with the WAITING
 * records: the initiator names its PSK's key id and the receiver checks that one record. Attacks against a receiver
 * with many WAITING records (a wrong PSK, a key id of a real record with a wrong PSK, a malformed one, none at all)
 * cost at most one signature check each and change nothing; real gateways still pair end to end, records made before
 * key ids included.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { pskKeyId } from '../../../../domains/federation/psk-key-id.ts';
import { federations } from '../../../../domains/federation/schema.ts';
import { canonicalizeRequest, pskKey, signCanonical } from '../../../../gateway/mesh/canonical.ts';
import type { GatewayMetrics } from '../../../../gateway/observability/metrics.ts';
import { createRecord, getRecord, newPsk, pairGateways, startPeer } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';

/** A pair call signed with `psk`, naming `keyId` (none when null), as an initiator would send it. */
function pairCall(gw: TestGateway, psk: string, keyId: string | null) {
  const clusterId = randomUUID();
  const ts = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    local_cluster_id: clusterId,
    local_cluster_name: 'crafted',
    local_ips: [],
    local_ca_cert: gw.gateway.caPem,
    nonce: randomUUID(),
  });
  const path = '/api/cluster/remote/pair';
  const canonical = canonicalizeRequest({
    sourceClusterId: clusterId,
    userId: '',
    roles: '',
    route: clusterId,
    method: 'POST',
    uri: path,
    ts,
    body,
  });
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-kz-mesh-source-cluster-id': clusterId,
    'x-kz-mesh-route': clusterId,
    'x-kz-mesh-signature': signCanonical(pskKey(psk), canonical),
    'x-kz-mesh-signature-ts': String(ts),
  };
  if (keyId !== null) headers['x-kz-mesh-key-id'] = keyId;
  return gw.request('POST', path, { body, headers });
}

/** Signature checks /remote/pair made so far on `gw`. */
async function pairChecks(gw: TestGateway): Promise<number> {
  const text = await (gw.gateway.deps.metrics as GatewayMetrics).registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith('meshgate_federation_pair_signature_checks_total'));
  return Number(line?.split(' ').pop() ?? 0);
}

test('an unauthenticated pair call costs at most one signature check, however many records wait', async (t) => {
  const b = await startPeer(t, 'fed-b');
  const psks = Array.from({ length: 40 }, () => newPsk());
  const waiting = [];
  for (const [i, psk] of psks.entries())
    waiting.push(await createRecord(b, { remote_cluster_name: `w${i}`, role: 'receiver', preshared_key: psk }));
  const target = waiting[17] as { id: string };
  const before = await pairChecks(b);

  const wrong = newPsk();
  const attacks = [
    ['a wrong PSK under its own key id', await pairCall(b, wrong, pskKeyId(wrong)), 'invalid_signature'],
    [
      "a wrong PSK under a real record's key id",
      await pairCall(b, wrong, pskKeyId(psks[17] as string)),
      'invalid_signature',
    ],
    ['a malformed key id', await pairCall(b, wrong, 'ZZ'), 'invalid_signature'],
    ['no key id, 40 records waiting', await pairCall(b, psks[17] as string, null), 'pairing_key_id_required'],
  ] as const;
  for (const [what, res, reason] of attacks) {
    assert.equal(res.status, 403, `${what}: ${res.text}`);
    assert.equal(res.json.detail.reason, reason, what);
  }
  assert.equal(await pairChecks(b), before + 1, 'one check in all: only the forged key id named a record');
  assert.equal((await getRecord(b, target.id)).status, 'WAITING', 'no attack changed the record it named');

  const paired = await pairCall(b, psks[17] as string, pskKeyId(psks[17] as string));
  assert.equal(paired.status, 200, paired.text);
  assert.equal(paired.json.federation_id, target.id);
  assert.equal(await pairChecks(b), before + 2);
  const statuses = await Promise.all(waiting.map(async (r) => (await getRecord(b, r.id)).status));
  assert.deepEqual(
    statuses.map((s, i) => [i, s]).filter(([, s]) => s !== 'WAITING'),
    [[17, 'PAIRED']],
  );
});

test('two waiting records with one PSK are ambiguous only to a caller that proves it', async (t) => {
  const b = await startPeer(t, 'fed-b');
  const psk = newPsk();
  for (const name of ['x', 'y'])
    await createRecord(b, { remote_cluster_name: name, role: 'receiver', preshared_key: psk });
  const forged = await pairCall(b, newPsk(), pskKeyId(psk));
  assert.equal(forged.json.detail.reason, 'invalid_signature');
  const proven = await pairCall(b, psk, pskKeyId(psk));
  assert.equal(proven.status, 409, proven.text);
  assert.equal(proven.json.detail.reason, 'psk_ambiguous');
});

test('gateways pair by key id with many records waiting; a record made before key ids gets one at start', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  for (let i = 0; i < 12; i++)
    await createRecord(b, { remote_cluster_name: `w${i}`, role: 'receiver', preshared_key: newPsk() });
  const before = await pairChecks(b);
  const { receiverId } = await pairGateways(a, b);
  assert.equal((await getRecord(b, receiverId)).status, 'PAIRED');
  assert.equal(await pairChecks(b), before + 1, 'the receiver checked one record');

  // A record as a gateway from before key ids left it: its key id is filled in when the gateway starts.
  const psk = newPsk();
  const old = await createRecord(b, { remote_cluster_name: 'old', role: 'receiver', preshared_key: psk });
  b.gateway.deps.db.update(federations).set({ pskKeyId: null }).run();
  const unknown = await pairCall(b, psk, pskKeyId(psk));
  assert.equal(unknown.json.detail.reason, 'invalid_signature', 'a record without a key id is not found by one');
  await b.restart();
  const { receiverId: again } = await pairGateways(a, b, newPsk());
  assert.equal((await getRecord(b, again)).status, 'PAIRED');
  const found = await pairCall(b, psk, pskKeyId(psk));
  assert.equal(found.status, 200, found.text);
  assert.equal(found.json.federation_id, old.id);
});
