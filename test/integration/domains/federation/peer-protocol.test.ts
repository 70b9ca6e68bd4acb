/**
 * The peer protocol as a peer sees it: signed calls crafted with the shared
 * canonicalizer against a real receiver.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import {
  canonicalizeRequest,
  canonicalizeResponse,
  pskKey,
  signatureMatches,
  signCanonical,
} from '../../../../gateway/mesh/canonical.ts';
import { createRecord, getRecord, newPsk, pairGateways, post, startPeer } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';

function signedPair(psk: string, clusterId: string, caPem: string, ts = Math.floor(Date.now() / 1000)) {
  const body = JSON.stringify({
    local_cluster_id: clusterId,
    local_cluster_name: 'crafted',
    local_ips: [],
    local_ca_cert: caPem,
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
  const headers = {
    'content-type': 'application/json',
    'x-kz-mesh-source-cluster-id': clusterId,
    'x-kz-mesh-route': clusterId,
    'x-kz-mesh-signature': signCanonical(pskKey(psk), canonical),
    'x-kz-mesh-signature-ts': String(ts),
  };
  return { path, body, headers };
}

const send = (gw: TestGateway, call: ReturnType<typeof signedPair>) =>
  gw.request('POST', call.path, { body: call.body, headers: call.headers });

test('a replayed handshake is refused, even against a fresh WAITING record with the same PSK', async (t) => {
  const b = await startPeer(t, 'fed-b');
  const psk = newPsk();
  const first = await createRecord(b, { remote_cluster_name: 'x', role: 'receiver', preshared_key: psk });
  const call = signedPair(psk, randomUUID(), b.gateway.caPem);
  const accepted = await send(b, call);
  assert.equal(accepted.status, 200, accepted.text);
  assert.equal(accepted.json.status, 'PAIRED');
  // The answer is signed with the same PSK and bound to our request signature.
  const proof = canonicalizeResponse({
    responderClusterId: String(accepted.headers['x-kz-mesh-source-cluster-id']),
    requestSignature: call.headers['x-kz-mesh-signature'],
    status: 200,
    ts: Number(accepted.headers['x-kz-mesh-signature-ts']),
    body: accepted.text,
  });
  assert.ok(signatureMatches(pskKey(psk), proof, String(accepted.headers['x-kz-mesh-response-signature'])));
  assert.equal((await getRecord(b, first.id)).status, 'PAIRED');

  const replay = await send(b, call);
  assert.equal(replay.status, 403);
  assert.equal(replay.json.detail.reason, 'invalid_signature', 'no WAITING record is left for it');
  const second = await createRecord(b, { remote_cluster_name: 'y', role: 'receiver', preshared_key: psk });
  const replayAgain = await send(b, call);
  assert.equal(replayAgain.status, 403);
  assert.equal(replayAgain.json.detail.reason, 'signature_replayed');
  assert.equal((await getRecord(b, second.id)).status, 'WAITING');
  await b.restart();
  assert.equal(
    (await send(b, call)).json.detail.reason,
    'signature_replayed',
    'the once-only record survives a restart',
  );
});

test('tampered or unsigned peer calls are refused and change nothing', async (t) => {
  const b = await startPeer(t, 'fed-b');
  const psk = newPsk();
  const rec = await createRecord(b, { remote_cluster_name: 'x', role: 'receiver', preshared_key: psk });
  const call = signedPair(psk, randomUUID(), b.gateway.caPem);
  const tampered = await send(b, { ...call, body: call.body.replace('crafted', 'mallory') });
  assert.equal(tampered.json.detail.reason, 'invalid_signature');
  const unsigned = await b.request('POST', '/api/cluster/remote/pair', { json: JSON.parse(call.body) });
  assert.equal(unsigned.status, 403);
  assert.equal(unsigned.json.detail.reason, 'invalid_signature');
  const old = signedPair(psk, randomUUID(), b.gateway.caPem, Math.floor(Date.now() / 1000) - 120);
  const skewed = await send(b, old);
  assert.equal(skewed.status, 403);
  assert.equal(skewed.json.detail.reason, 'pairing_clock_skew');
  const withUserToken = await b.request('POST', '/api/cluster/remote/ping', { token: await b.adminToken(), json: {} });
  assert.equal(withUserToken.json.detail.reason, 'invalid_signature', 'a user token is no peer credential');
  assert.equal((await getRecord(b, rec.id)).status, 'WAITING');
});

test('a PSK reused across pairings: ping and disconnect reach the record the caller names', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const psk = newPsk();
  const first = await pairGateways(a, b, psk);
  assert.equal((await post(a, `/${first.initiatorId}/disconnect`)).status, 200);
  const second = await pairGateways(a, b, psk);
  const ping = await post(a, `/${second.initiatorId}/ping`);
  assert.equal(ping.status, 200, `the disconnected record verifies too, yet the PAIRED one answers: ${ping.text}`);
  const third = await pairGateways(a, b, psk);
  const disconnect = await post(a, `/${third.initiatorId}/disconnect`);
  assert.equal(disconnect.json.peer_acknowledged, true, disconnect.text);
  assert.equal((await getRecord(b, third.receiverId)).status, 'DISCONNECTED', 'the named record is disconnected');
  assert.equal((await getRecord(b, second.receiverId)).status, 'PAIRED', 'its sibling with the same PSK stays up');
  assert.equal((await post(a, `/${second.initiatorId}/ping`)).status, 200);
});
