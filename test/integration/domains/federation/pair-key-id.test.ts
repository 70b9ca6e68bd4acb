/**
 * /remote/pair is unauthenticated until its signature verifies, so what a call costs must not grow with the WAITING
 * records: the initiator names its PSK's key id and the receiver checks that one record. Attacks against a receiver
 * with many WAITING records (a wrong PSK, a key id of a real record with a wrong PSK, a malformed one, none at all)
 * cost at most one signature check each and change nothing; real gateways still pair end to end, records made before
 * key ids included. The database holds no key id a PSK guess can be tested against: only a digest of it under a key of
 * the gateway's PSK vault, on WAITING receivers.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { pskKeyId } from '../../../../domains/federation/psk-key-id.ts';
import { PskVault } from '../../../../domains/federation/psk-vault.ts';
import { federations } from '../../../../domains/federation/schema.ts';
import { eq } from '../../../../gateway/db/drizzle.ts';
import { canonicalizeRequest, pskKey, signCanonical } from '../../../../gateway/mesh/canonical.ts';
import type { GatewayMetrics } from '../../../../gateway/observability/metrics.ts';
import { createRecord, getRecord, newPsk, pairGateways, post, startPeer } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';

/** A pair call signed with `psk`, naming `keyId` (none when null), as an initiator would send it, `skew` s off. */
function pairCall(gw: TestGateway, psk: string, keyId: string | null, skew = 0) {
  const clusterId = randomUUID();
  const ts = Math.floor(Date.now() / 1000) + skew;
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

/** What `gw`'s database holds as the key id of record `id`. */
function storedKeyId(gw: TestGateway, id: string): string | null | undefined {
  return gw.gateway.deps.db.select().from(federations).where(eq(federations.id, id)).get()?.pskKeyId;
}

/** The lookup digest `gw` stores for `psk`'s key id: under its own PSK vault's key. */
function lookupOf(gw: TestGateway, psk: string): string {
  return PskVault.open(gw.gateway.deps.config.dataDir).keyIdLookup(pskKeyId(psk));
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

test('gateways pair by key id with many records waiting; a record without a key id is still found', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  for (let i = 0; i < 12; i++)
    await createRecord(b, { remote_cluster_name: `w${i}`, role: 'receiver', preshared_key: newPsk() });
  const before = await pairChecks(b);
  const { receiverId } = await pairGateways(a, b);
  assert.equal((await getRecord(b, receiverId)).status, 'PAIRED');
  assert.equal(await pairChecks(b), before + 1, 'the receiver checked one record');

  // A record as an older gateway on the same database leaves it (rolling upgrade): no key id. A keyed call that names
  // no record tries the few such records, and the one that verifies gets its lookup digest from its own PSK.
  const psk = newPsk();
  const old = await createRecord(b, { remote_cluster_name: 'old', role: 'receiver', preshared_key: psk });
  b.gateway.deps.db.update(federations).set({ pskKeyId: null }).where(eq(federations.id, old.id)).run();
  const checks = await pairChecks(b);
  const forged = await pairCall(b, newPsk(), pskKeyId(psk));
  assert.equal(forged.json.detail.reason, 'invalid_signature');
  assert.equal(await pairChecks(b), checks + 1, 'the one record without a key id was tried, no other');
  assert.equal(storedKeyId(b, old.id), null, 'a call that did not verify fills in nothing');
  const late = await pairCall(b, psk, pskKeyId(psk), -120);
  assert.equal(late.json.detail.reason, 'pairing_clock_skew', late.text);
  assert.equal(storedKeyId(b, old.id), lookupOf(b, psk), 'a verified call filled in its lookup digest');
  assert.equal(await pairChecks(b), checks + 2);
  const found = await pairCall(b, psk, pskKeyId(psk));
  assert.equal(found.status, 200, found.text);
  assert.equal(found.json.federation_id, old.id);
  assert.equal(await pairChecks(b), checks + 3, 'found by its key id: one check');
});

test('the database keeps only a keyed digest of a key id, on WAITING receivers, refilled at start', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const psk = newPsk();
  const waiting = await createRecord(b, { remote_cluster_name: 'w', role: 'receiver', preshared_key: psk });
  const stored = storedKeyId(b, waiting.id);
  assert.match(stored ?? '', /^[0-9a-f]{64}$/);
  assert.notEqual(stored, pskKeyId(psk), 'not the key id itself: HMAC(PSK, label) would test a guess offline');
  assert.ok(!(stored ?? '').includes(pskKeyId(psk)));
  assert.equal(stored, lookupOf(b, psk), "an HMAC under the gateway's PSK vault lookup key");
  assert.notEqual(lookupOf(a, psk), stored, "another gateway's vault gives another digest");

  const ended = await createRecord(b, { remote_cluster_name: 'e', role: 'receiver', preshared_key: newPsk() });
  assert.equal((await post(b, `/${ended.id}/disconnect`)).status, 200);
  assert.equal(storedKeyId(b, ended.id), null, 'cleared when the record leaves WAITING');
  const { initiatorId, receiverId } = await pairGateways(a, b);
  assert.equal(storedKeyId(a, initiatorId), null, 'never on an initiator record');
  assert.equal(storedKeyId(b, receiverId), null, 'cleared once paired');

  // A database whose key ids were cleared (the migration from the unkeyed form), and a record whose PSK no longer
  // opens: the gateway still starts, names the broken record once, and refills the others.
  const broken = await createRecord(b, { remote_cluster_name: 'broken', role: 'receiver', preshared_key: newPsk() });
  b.gateway.deps.db.update(federations).set({ pskKeyId: null }).run();
  b.gateway.deps.db
    .update(federations)
    .set({ pskEnc: `v1:${'A'.repeat(16)}:${'A'.repeat(24)}:AAAA` })
    .where(eq(federations.id, broken.id))
    .run();
  const logged = b.logs.length;
  await b.restart();
  assert.equal(storedKeyId(b, waiting.id), stored, 'the WAITING receiver has its digest again');
  for (const id of [ended.id, receiverId, broken.id]) assert.equal(storedKeyId(b, id), null, id);
  const named = b.logs.slice(logged).filter((line) => line.includes(broken.id));
  assert.equal(named.length, 1, `the undecryptable record is logged once: ${named.join('')}`);
  assert.match(named[0] as string, /PSK does not open/);
  const found = await pairCall(b, psk, pskKeyId(psk));
  assert.equal(found.status, 200, found.text);
  assert.equal(found.json.federation_id, waiting.id);
});
