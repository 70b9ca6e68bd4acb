import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  createRecord,
  getRecord,
  newPsk,
  pairGateways,
  post,
  routeTo,
  SHARED_ISSUER,
  startPeer,
} from '../../../helpers/federation.ts';

const BASE = '/api/cluster/federations';

test(
  'create: receiver WAITING, initiator PAIRING; peer_kc gated by policy; ' + 'remote_ips required for initiators',
  async (t) => {
    const a = await startPeer(t, 'fed-a');
    const token = await a.adminToken();
    const peerKc = await a.request('POST', BASE, {
      token,
      json: { remote_cluster_name: 'x', role: 'receiver', preshared_key: newPsk() },
    });
    assert.equal(peerKc.status, 400);
    assert.equal(peerKc.json.detail.reason, 'untrusted_federation_disabled');
    const realm = await a.request('POST', BASE, {
      token,
      json: {
        remote_cluster_name: 'x',
        role: 'receiver',
        preshared_key: newPsk(),
        shared_issuer_url: SHARED_ISSUER,
        identity_mode: 'receiver_realm',
      },
    });
    assert.equal(realm.json.detail.reason, 'identity_mode_unsupported');
    const noIps = await a.request('POST', BASE, {
      token,
      json: { remote_cluster_name: 'x', role: 'initiator', preshared_key: newPsk(), shared_issuer_url: SHARED_ISSUER },
    });
    assert.equal(noIps.status, 422);
    assert.deepEqual(noIps.json.detail[0].loc, ['body', 'remote_ips']);
    const badIp = await a.request('POST', BASE, {
      token,
      json: {
        remote_cluster_name: 'x',
        preshared_key: newPsk(),
        shared_issuer_url: SHARED_ISSUER,
        remote_ips: [{ ip: 'https://x/y', primary: true }],
      },
    });
    assert.equal(badIp.status, 422);
    const kc = await a.request('POST', BASE, {
      token,
      json: {
        remote_cluster_name: 'x',
        role: 'receiver',
        preshared_key: newPsk(),
        shared_issuer_url: SHARED_ISSUER,
        local_kc_issuer_url: 'https://kc.test/realms/a',
      },
    });
    assert.equal(kc.status, 422);
    assert.deepEqual(kc.json.detail.map((p: { loc: string[] }) => p.loc[1]).sort(), [
      'local_broker_client_id',
      'local_broker_client_secret',
      'local_kc_jwks_url',
    ]);

    const receiver = await createRecord(a, {
      remote_cluster_name: 'r',
      role: 'receiver',
      preshared_key: newPsk(),
      shared_jwks_url: 'https://ignored.test/jwks',
    });
    assert.equal(receiver.status, 'WAITING');
    assert.equal(receiver.shared_jwks_url, null, 'shared_jwks_url is accepted with no effect');
    assert.equal(receiver.brokering_enabled, true);
    assert.ok(!('preshared_key' in receiver));
    const initiator = await createRecord(a, {
      remote_cluster_name: 'i',
      remote_ips: [
        { ip: '[::1]:8443', hostname: 'fed-b.test' },
        { ip: '127.0.0.1:8443', hostname: 'fed-b.test', primary: true },
      ],
      preshared_key: newPsk(),
    });
    assert.equal(initiator.status, 'PAIRING', 'role defaults to initiator');
    assert.deepEqual(
      initiator.remote_ips.map((r: { primary: boolean }) => r.primary),
      [false, true],
    );

    const b = await startPeer(t, 'fed-b', { federation: { allowUntrustedFederation: true, peerTimeoutMs: 3000 } });
    const trusted = await b.request('POST', BASE, {
      token: await b.adminToken(),
      json: { remote_cluster_name: 'x', role: 'receiver', preshared_key: newPsk() },
    });
    assert.equal(trusted.status, 200, trusted.text);
    assert.equal(trusted.json.identity_mode, 'peer_kc');
    assert.equal(trusted.json.trust_posture, 'source_trusted');
    assert.equal(trusted.json.require_peer_jwt, true);
  },
);

test('list filters by status with skip/limit; get answers 404 when absent', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const token = await a.adminToken();
  for (let i = 0; i < 3; i++)
    await createRecord(a, { remote_cluster_name: `r${i}`, role: 'receiver', preshared_key: newPsk() });
  await createRecord(a, {
    remote_cluster_name: 'i0',
    remote_ips: [{ ip: '127.0.0.1:1', hostname: 'x.test' }],
    preshared_key: newPsk(),
  });
  const all = await a.request('GET', BASE, { token });
  assert.equal(all.json.length, 4);
  const waiting = await a.request('GET', `${BASE}?status=WAITING&skip=1&limit=1`, { token });
  assert.deepEqual(
    waiting.json.map((r: { remote_cluster_name: string }) => r.remote_cluster_name),
    ['r1'],
  );
  const pairing = await a.request('GET', `${BASE}?status=PAIRING`, { token });
  assert.deepEqual(
    pairing.json.map((r: { status: string }) => r.status),
    ['PAIRING'],
  );
  assert.equal((await a.request('GET', `${BASE}?status=FAILED`, { token })).status, 422);
  const missing = await a.request('GET', `${BASE}/${crypto.randomUUID()}`, { token });
  assert.equal(missing.status, 404);
  assert.equal(missing.json.detail.reason, 'federation_not_found');
});

test(
  'PUT changes only brokering_enabled, shared_ca_pem, require_peer_jwt; ' + 'anything else refuses the whole request',
  async (t) => {
    const a = await startPeer(t, 'fed-a');
    const token = await a.adminToken();
    const rec = await createRecord(a, { remote_cluster_name: 'r', role: 'receiver', preshared_key: newPsk() });
    const ok = await a.request('PUT', `${BASE}/${rec.id}`, {
      token,
      json: {
        brokering_enabled: false,
        require_peer_jwt: true,
        shared_ca_pem: a.gateway.caPem,
        shared_jwks_url: 'https://x.test/jwks',
        realm_scope: 'ignored',
      },
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.brokering_enabled, false);
    assert.equal(ok.json.require_peer_jwt, true);
    assert.equal(ok.json.shared_ca_pem, a.gateway.caPem);
    assert.equal(ok.json.shared_jwks_url, null);
    const refused = await a.request('PUT', `${BASE}/${rec.id}`, {
      token,
      json: {
        brokering_enabled: true,
        preshared_key: 'new-psk-new-psk-new',
        remote_ips: [routeTo(a)],
        shared_issuer_url: 'https://other.test',
        status: 'PAIRED',
        identity_mode: 'peer_kc',
        created_at: 'x',
      },
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.detail.reason, 'federation_field_immutable');
    assert.deepEqual(refused.json.detail.fields, [
      'created_at',
      'identity_mode',
      'preshared_key',
      'remote_ips',
      'shared_issuer_url',
      'status',
    ]);
    assert.equal((await getRecord(a, rec.id)).brokering_enabled, false, 'nothing was applied');
    const same = await a.request('PUT', `${BASE}/${rec.id}`, {
      token,
      json: { id: rec.id, status: 'WAITING', brokering_enabled: true },
    });
    assert.equal(same.status, 200, 'echoing unchanged values is not a change');
    const badType = await a.request('PUT', `${BASE}/${rec.id}`, { token, json: { brokering_enabled: 'yes' } });
    assert.equal(badType.status, 422);
    const badPem = await a.request('PUT', `${BASE}/${rec.id}`, { token, json: { shared_ca_pem: 'not a pem' } });
    assert.equal(badPem.status, 422);
  },
);

test(
  'disconnect asks the peer first: peer down → 502 ' +
    'peer_disconnect_failed and nothing changes; force disconnects locally, and the peer follows at its next ping',
  async (t) => {
    const a = await startPeer(t, 'fed-a');
    const b = await startPeer(t, 'fed-b');
    const { initiatorId, receiverId } = await pairGateways(a, b);
    await b.stop();
    const refused = await post(a, `/${initiatorId}/disconnect`);
    assert.equal(refused.status, 502, refused.text);
    assert.equal(refused.json.detail.reason, 'peer_disconnect_failed');
    assert.equal(refused.json.detail.cause, 'connection_failed');
    assert.equal((await getRecord(a, initiatorId)).status, 'PAIRED');
    const forced = await post(a, `/${initiatorId}/disconnect?force=true`);
    assert.equal(forced.status, 200, forced.text);
    assert.deepEqual(
      { ...forced.json },
      {
        federation_id: initiatorId,
        status: 'DISCONNECTED',
        peer_acknowledged: false,
        message: 'Federation disconnected',
      },
    );
    await b.start();
    assert.equal(
      (await getRecord(b, receiverId)).status,
      'PAIRED',
      'the receiver never heard of the forced disconnect',
    );
    // The next contact ends it on this side too: the peer's refusal is signed with the PSK.
    const ping = await post(b, `/${receiverId}/ping`);
    assert.equal(ping.status, 409, ping.text);
    assert.equal(ping.json.detail.reason, 'peer_pairing_ended');
    const ended = await getRecord(b, receiverId);
    assert.deepEqual([ended.status, ended.status_reason], ['DISCONNECTED', 'peer_not_paired']);
    assert.equal((await getRecord(a, initiatorId)).status_reason, 'operator_forced');
  },
);

test('default disconnect with the peer up: both sides DISCONNECTED, peer acknowledged', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const { initiatorId, receiverId } = await pairGateways(a, b);
  const res = await post(b, `/${receiverId}/disconnect`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.peer_acknowledged, true);
  assert.equal((await getRecord(a, initiatorId)).status, 'DISCONNECTED');
  assert.equal((await getRecord(b, receiverId)).status, 'DISCONNECTED');
  const ping = await post(a, `/${initiatorId}/ping`);
  assert.equal(ping.json.detail.reason, 'federation_not_paired');
});

test('delete: soft delete with best-effort peer teardown, listable as DELETED, idempotent', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const { initiatorId, receiverId } = await pairGateways(a, b);
  const token = await a.adminToken();
  const del = await a.request('DELETE', `${BASE}/${initiatorId}`, { token });
  assert.equal(del.status, 200, del.text);
  assert.equal(del.json.status, 'DELETED');
  assert.equal(del.json.peer_acknowledged, true);
  assert.equal((await getRecord(b, receiverId)).status, 'DISCONNECTED');
  assert.equal((await getRecord(a, initiatorId)).status, 'DELETED');
  const deleted = await a.request('GET', `${BASE}?status=DELETED`, { token });
  assert.deepEqual(
    deleted.json.map((r: { id: string }) => r.id),
    [initiatorId],
  );
  assert.equal((await a.request('DELETE', `${BASE}/${initiatorId}`, { token })).status, 200);
  assert.equal((await post(a, `/${initiatorId}/disconnect`)).json.detail.reason, 'federation_state_conflict');
  // Best effort: deleting while the peer is down still succeeds, unacknowledged.
  const second = await pairGateways(a, b);
  await a.stop();
  const offline = await b.request('DELETE', `${BASE}/${second.receiverId}`, { token: await b.adminToken() });
  assert.equal(offline.status, 200, offline.text);
  assert.deepEqual([offline.json.status, offline.json.peer_acknowledged], ['DELETED', false]);
});

test('non-admin callers are refused on every admin endpoint; ping is open to any authenticated user', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const { initiatorId } = await pairGateways(a, b);
  const { token } = await a.userToken('alice');
  const id = initiatorId;
  const admin: [string, string][] = [
    ['GET', BASE],
    ['POST', BASE],
    ['POST', `${BASE}/preflight`],
    ['POST', `${BASE}/resolve-address`],
    ['GET', `${BASE}/${id}`],
    ['PUT', `${BASE}/${id}`],
    ['DELETE', `${BASE}/${id}`],
    ['POST', `${BASE}/${id}/pair`],
    ['POST', `${BASE}/${id}/disconnect`],
    ['POST', `${BASE}/${id}/diagnose`],
    ['POST', `${BASE}/${id}/users`],
    ['GET', `${BASE}/${id}/users`],
    ['POST', `${BASE}/${id}/users/u%40c/revoke`],
    ['POST', `${BASE}/${id}/users/u%40c/restore`],
  ];
  for (const [method, path] of admin) {
    const res = await a.request(method, path, { token, json: {} });
    assert.equal(res.status, 403, `${method} ${path}`);
    assert.equal(res.json.detail.reason, 'admin_required', `${method} ${path}`);
    assert.equal((await a.request(method, path, { json: {} })).status, 401, `${method} ${path} anonymous`);
  }
  const ping = await a.request('POST', `${BASE}/${id}/ping`, { token });
  assert.equal(ping.status, 200, ping.text);
  assert.equal(ping.json.reachable, true);
  assert.equal((await getRecord(a, id)).status, 'PAIRED');
});

test(
  'restart of either gateway mid-way loses nothing: records, PSKs, ' + 'cluster ids and peer trust survive',
  async (t) => {
    const a = await startPeer(t, 'fed-a');
    const b = await startPeer(t, 'fed-b');
    const psk = newPsk();
    const r = await createRecord(b, { remote_cluster_name: 'a', role: 'receiver', preshared_key: psk });
    await b.restart();
    const i = await createRecord(a, {
      remote_cluster_name: 'b',
      role: 'initiator',
      remote_ips: [routeTo(b)],
      preshared_key: psk,
    });
    await a.restart();
    const paired = await post(a, `/${i.id}/pair`);
    assert.equal(paired.status, 200, paired.text);
    const before = [await getRecord(a, i.id), await getRecord(b, r.id)];
    await a.restart();
    await b.restart();
    assert.deepEqual([await getRecord(a, i.id), await getRecord(b, r.id)], before);
    for (const [gw, id] of [
      [a, i.id],
      [b, r.id],
    ] as const)
      assert.equal((await post(gw, `/${id}/ping`)).json.reachable, true);
  },
);

test(
  'peer CA rotated: diagnose reports tls_untrusted_ca with the re-pair ' + 'remedy; ping fails at the TLS layer',
  async (t) => {
    const a = await startPeer(t, 'fed-a');
    const b = await startPeer(t, 'fed-b');
    const { initiatorId } = await pairGateways(a, b);
    const healthy = await post(a, `/${initiatorId}/diagnose`);
    assert.equal(healthy.status, 200);
    assert.equal(healthy.json.ok, true, healthy.text);
    assert.deepEqual(
      healthy.json.layers.map((l: { layer: string; ok: boolean }) => [l.layer, l.ok]),
      [
        ['dns', true],
        ['tcp', true],
        ['tls', true],
        ['http', true],
        ['hmac', true],
      ],
    );
    // A new CA: on PostgreSQL the cluster's copy in the database goes too, or the next start would restore it.
    if (b.gateway.deps.config.database !== null)
      b.gateway.deps.sql.prepare("DELETE FROM cluster_files WHERE path LIKE 'tls/%'").run();
    await b.stop();
    rmSync(join(b.dataDir, 'tls'), { recursive: true, force: true });
    await b.start();
    const report = await post(a, `/${initiatorId}/diagnose`);
    assert.equal(report.status, 200);
    assert.equal(report.json.ok, false);
    assert.equal(report.json.reason, 'tls_untrusted_ca');
    assert.match(report.json.remedy, /re-pair/);
    const tls = report.json.layers.find((l: { layer: string }) => l.layer === 'tls');
    assert.equal(tls.reason, 'tls_untrusted_ca');
    assert.deepEqual(
      report.json.layers.slice(3).map((l: { reason: string }) => l.reason),
      ['skipped', 'skipped'],
    );
    const ping = await post(a, `/${initiatorId}/ping`);
    assert.equal(ping.status, 502);
    assert.equal(ping.json.detail.reason, 'tls_untrusted_ca');
  },
);
