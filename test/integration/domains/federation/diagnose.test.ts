import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { newPsk, pairGateways, post, routeTo, startPeer } from '../../../helpers/federation.ts';

type Layer = { layer: string; ok: boolean; reason: string | null };
const layers = (report: { layers: Layer[] }) => report.layers.map((l) => `${l.layer}:${l.ok ? 'ok' : l.reason}`);

test('preflight probes a proposed route layer by layer before anything is stored', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const good = await post(a, '/preflight', { remote_ips: [routeTo(b)] });
  assert.equal(good.status, 200, good.text);
  assert.equal(good.json.ok, true);
  assert.deepEqual(layers(good.json), ['dns:ok', 'tcp:ok', 'tls:ok', 'http:ok', 'hmac:skipped']);
  assert.deepEqual(good.json.target, { ip: `127.0.0.1:${b.port}`, hostname: 'fed-b.test', port: b.port });
  assert.equal(
    (await a.request('GET', '/api/cluster/federations', { token: await a.adminToken() })).json.length,
    0,
    'nothing persisted',
  );

  const wrongName = await post(a, '/preflight', { remote_ips: [{ ...routeTo(b), hostname: 'not-fed-b.test' }] });
  assert.equal(wrongName.json.reason, 'tls_hostname_mismatch');
  assert.match(wrongName.json.remedy, /hostname/);

  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const refused = await post(a, '/preflight', { remote_ips: [{ ip: `127.0.0.1:${port}`, hostname: 'fed-b.test' }] });
  assert.equal(refused.json.reason, 'connection_failed');
  assert.deepEqual(layers(refused.json), [
    'dns:ok',
    'tcp:connection_failed',
    'tls:skipped',
    'http:skipped',
    'hmac:skipped',
  ]);

  const dns = await post(a, '/preflight', { remote_ips: [{ ip: 'no-such-peer.invalid', hostname: 'fed-b.test' }] });
  assert.equal(dns.json.reason, 'dns_unresolvable');
  assert.equal(dns.json.layers[0].reason, 'dns_unresolvable');

  // Not a TLS listener: answers plain HTTP and closes (the client's reset is expected).
  const plain = createServer((socket) => socket.on('error', () => {}).end('HTTP/1.1 200 OK\r\n\r\n'));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  t.after(() => plain.close());
  const notTls = await post(a, '/preflight', {
    remote_ips: [{ ip: `127.0.0.1:${(plain.address() as { port: number }).port}`, hostname: 'fed-b.test' }],
  });
  assert.equal(notTls.json.layers[2].layer, 'tls');
  assert.equal(notTls.json.layers[2].ok, false);
  assert.equal(notTls.json.reason, notTls.json.layers[2].reason);
});

test(
  'diagnose of a paired record runs the signed layer; a peer that forgot ' + 'the pairing is federation_not_active',
  async (t) => {
    const a = await startPeer(t, 'fed-a');
    const b = await startPeer(t, 'fed-b');
    const { initiatorId, receiverId } = await pairGateways(a, b);
    const report = await post(a, `/${initiatorId}/diagnose`);
    assert.deepEqual(layers(report.json), ['dns:ok', 'tcp:ok', 'tls:ok', 'http:ok', 'hmac:ok']);
    assert.equal(report.json.federation_id, initiatorId);
    assert.equal((await post(b, `/${receiverId}/disconnect?force=true`)).status, 200);
    const stale = await post(a, `/${initiatorId}/diagnose`);
    assert.equal(stale.json.reason, 'federation_not_active');
    assert.match(stale.json.remedy, /re-pair/);
    const waiting = await post(b, '', {
      remote_cluster_name: 'w',
      role: 'receiver',
      preshared_key: newPsk(),
      shared_issuer_url: 'https://idp.test/r',
    });
    const noRoute = await post(b, `/${waiting.json.id}/diagnose`);
    assert.equal(noRoute.json.reason, 'no_route');
  },
);

test('resolve-address: a name by DNS, an IP by the certificate SANs', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const byIp = await post(a, '/resolve-address', { address: `127.0.0.1:${b.port}` });
  assert.equal(byIp.status, 200, byIp.text);
  assert.deepEqual(byIp.json, {
    input: `127.0.0.1:${b.port}`,
    ip: '127.0.0.1',
    fqdn: 'fed-b.test',
    source: 'tls_san',
    error: null,
  });
  const byName = await post(a, '/resolve-address', { address: 'localhost' });
  assert.equal(byName.json.source, 'dns');
  assert.equal(byName.json.fqdn, 'localhost');
  assert.ok(['127.0.0.1', '::1'].includes(byName.json.ip));
  const unknown = await post(a, '/resolve-address', { address: 'no-such-peer.invalid' });
  assert.deepEqual([unknown.json.ip, unknown.json.error], [null, 'dns_unresolvable']);
  assert.equal((await post(a, '/resolve-address', { address: 'http://x' })).status, 422);
});
