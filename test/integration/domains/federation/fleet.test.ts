/**
 * Federation at scale, with real gateways: reconciliation pings end a one-sided forced disconnect on both sides and
 * cannot be faked without the PSK; two PAIRED records sharing a name are reported; a record that leaves PAIRED gives
 * its peer pool back; a cluster left on the default name advertises one derived from its id; last-activity writes
 * publish nothing on the change feed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GatewayMetrics } from '../../../../gateway/observability/metrics.ts';
import { getRecord, pairGateways, post, startPeer } from '../../../helpers/federation.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

async function metric(gw: TestGateway, name: string): Promise<string[]> {
  const text = await (gw.gateway.deps.metrics as GatewayMetrics).registry.metrics();
  return text.split('\n').filter((line: string) => line.startsWith(`meshgate_${name}`));
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('a forced disconnect while the peer is down ends on the peer at its next reconciliation ping', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b', { federation: { peerTimeoutMs: 3000, reconcileIntervalSeconds: 1 } });
  const { initiatorId, receiverId } = await pairGateways(a, b);
  await b.stop();
  assert.equal((await post(a, `/${initiatorId}/disconnect?force=true`)).status, 200);
  await b.start();
  const ended = await until(
    () => getRecord(b, receiverId),
    (r) => r.status === 'DISCONNECTED',
    'the receiver record after reconciliation',
  );
  assert.equal(ended.status_reason, 'peer_not_paired');
  assert.ok((await metric(b, 'federation_reconcile_total')).some((l) => l.includes('outcome="peer_pairing_ended"} 1')));
});

test('a ping claiming the peer without the PSK is refused unsigned and changes nothing', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const { initiatorId, receiverId } = await pairGateways(a, b);
  await post(a, `/${initiatorId}/disconnect?force=true`);
  const initiator = await getRecord(a, initiatorId);
  const forged = await a.request('POST', '/api/cluster/remote/ping', {
    headers: {
      'x-kz-mesh-source-cluster-id': initiator.remote_cluster_id,
      'x-kz-mesh-route': initiator.remote_cluster_id,
      'x-kz-mesh-signature': 'A'.repeat(43),
      'x-kz-mesh-signature-ts': String(Math.floor(Date.now() / 1000)),
    },
    json: { federation_id: receiverId, nonce: crypto.randomUUID() },
  });
  assert.equal(forged.status, 403, forged.text);
  assert.equal(forged.json.detail.reason, 'invalid_signature');
  assert.equal(forged.headers['x-kz-mesh-response-signature'], undefined, 'no proof of the record state leaks');
  assert.equal((await getRecord(b, receiverId)).status, 'PAIRED', 'nothing reached the receiver');
});

test('two PAIRED records with one name: reported in the list, the metrics and the log; selectable by id', async (t) => {
  const hub = await startPeer(t, 'fed-hub');
  const one = await startPeer(t, 'fed-one', { clusterName: 'twin' });
  const two = await startPeer(t, 'fed-two', { clusterName: 'twin' });
  const first = await pairGateways(one, hub);
  const second = await pairGateways(two, hub);
  const res = await hub.request('GET', '/api/cluster/federations?status=PAIRED', { token: await hub.adminToken() });
  const flags = (res.json as { id: string; name_collision: boolean }[]).map((r) => [r.id, r.name_collision] as const);
  assert.deepEqual(
    new Map(flags),
    new Map([
      [first.receiverId, true],
      [second.receiverId, true],
    ]),
  );
  assert.ok(
    (await metric(hub, 'federation_name_collisions')).includes(
      'meshgate_federation_name_collisions{remote_cluster="twin"} 2',
    ),
  );
  await post(hub, `/${second.receiverId}/disconnect`);
  assert.equal((await getRecord(hub, first.receiverId)).name_collision, false, 'one record left: no collision');
});

test('a record that leaves PAIRED releases its peer pool', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const { initiatorId } = await pairGateways(a, b);
  assert.equal((await post(a, `/${initiatorId}/ping`)).status, 200);
  assert.deepEqual(await metric(a, 'federation_peer_pools'), ['meshgate_federation_peer_pools 1']);
  assert.equal((await post(a, `/${initiatorId}/disconnect`)).status, 200);
  assert.deepEqual(await metric(a, 'federation_peer_pools'), ['meshgate_federation_peer_pools 0']);
});

test('left on the default name, a fresh cluster advertises one derived from its id', async (t) => {
  const gw = await startTestGateway(t, { hostnames: ['fresh.test'] });
  const res = await gw.request('GET', '/api/cluster/cluster_capabilities', { token: await gw.adminToken() });
  assert.match(res.json.cluster_name, /^meshgate-[0-9a-f]{12}$/);
  assert.equal(res.json.cluster_name.slice(9), res.json.cluster_id.replaceAll('-', '').slice(0, 12));
});

test('last-activity writes publish nothing on the change feed; a status change publishes its record', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const { initiatorId } = await pairGateways(a, b);
  const sql = a.gateway.deps.sql;
  const published = () =>
    (sql.prepare("SELECT count(*) AS n FROM changes WHERE topic = 'federations'").get() as { n: number }).n;
  const before = published();
  for (let i = 0; i < 3; i++) assert.equal((await post(a, `/${initiatorId}/ping`)).status, 200);
  assert.equal(published(), before, 'pings write last_ping and last_activity only');
  await post(a, `/${initiatorId}/disconnect`);
  assert.equal(published(), before + 1);
});
