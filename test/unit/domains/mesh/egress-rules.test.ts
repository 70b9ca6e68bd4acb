/** Table-driven rules of mesh egress and ingress helpers. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { extendRoute } from '../../../../domains/mesh/egress.ts';
import { indexPeers, resolveSelector } from '../../../../domains/mesh/selector.ts';
import { NODE_CLOCK_SKEW_SECONDS } from '../../../../gateway/cluster/nodes.ts';
import { ApiError } from '../../../../gateway/errors/api-error.ts';
import { readBody } from '../../../../gateway/http/body.ts';
import { guardMeshBody } from '../../../../gateway/mesh/body-guard.ts';
import type { MeshPeer } from '../../../../gateway/mesh/directory.ts';
import { negotiateFeatures } from '../../../../gateway/mesh/features.ts';
import { forwardableRequestHeaders, remoteUri } from '../../../../gateway/mesh/headers.ts';
import { ReplayCache } from '../../../../gateway/mesh/replay.ts';
import { openTwoConnections } from '../../../helpers/engine.ts';

const peer = (id: string, remoteClusterId: string, remoteClusterName: string): MeshPeer => ({
  id,
  remoteClusterId,
  remoteClusterName,
  remoteFederationId: null,
  status: 'PAIRED',
  features: [],
});
const PEERS = [
  peer('11111111-1111-4111-8111-111111111111', 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'east-1'),
  peer('22222222-2222-4222-8222-222222222222', 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', 'east-2'),
  peer('33333333-3333-4333-8333-333333333333', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', 'west'),
];
const LOCAL = { id: 'dddddddd-dddd-4ddd-8ddd-dddddddddddd', name: 'home' };

test('selector precedence and outcomes', async (t) => {
  const rows: { selector: string; expect: string }[] = [
    { selector: '11111111-1111-4111-8111-111111111111', expect: 'east-1' },
    { selector: 'BBBBBBBB-BBBB-4BBB-8BBB-BBBBBBBBBBBB', expect: 'east-2' },
    { selector: 'west', expect: 'west' },
    { selector: 'we', expect: 'west' },
    { selector: 'east-1', expect: 'east-1' },
    { selector: 'east', expect: 'mesh_target_ambiguous' },
    { selector: 'north', expect: 'mesh_target_not_found' },
    { selector: LOCAL.id, expect: 'mesh_target_is_local' },
    { selector: 'home', expect: 'mesh_target_is_local' },
  ];
  for (const row of rows) {
    await t.test(row.selector, () => {
      try {
        assert.equal(resolveSelector(row.selector, indexPeers(PEERS), LOCAL).remoteClusterName, row.expect);
      } catch (error) {
        assert.ok(error instanceof ApiError);
        assert.equal(error.reason, row.expect);
      }
    });
  }
});

test('remote path: /api prepended unless it already starts with api/ or runtime/', () => {
  assert.equal(remoteUri('catalog/datasets/'), '/api/catalog/datasets/');
  assert.equal(remoteUri('api/catalog/datasets/'), '/api/catalog/datasets/');
  assert.equal(remoteUri('runtime/models/m/v1/chat/completions'), '/runtime/models/m/v1/chat/completions');
  assert.equal(remoteUri('apis/x'), '/api/apis/x');
  assert.equal(remoteUri('catalog/datasets/v2/urn%3Ali%3Ax%2Fy'), '/api/catalog/datasets/v2/urn%3Ali%3Ax%2Fy');
});

test('route trace: appended, loops and the ninth hop refused', () => {
  const ids = Array.from({ length: 8 }, (_, i) => `0000000${i}-0000-4000-8000-000000000000`);
  assert.deepEqual(extendRoute([], LOCAL.id), [LOCAL.id]);
  assert.deepEqual(extendRoute(ids.slice(0, 7), LOCAL.id), [...ids.slice(0, 7), LOCAL.id]);
  assert.throws(() => extendRoute(ids, LOCAL.id), /mesh_hop_limit_exceeded/);
  assert.throws(() => extendRoute([ids[0] as string, LOCAL.id], LOCAL.id), /mesh_hop_limit_exceeded/);
});

test('egress drops credentials, proxy and identity headers and hop-by-hop fields', () => {
  const out = forwardableRequestHeaders({
    authorization: 'Bearer t',
    cookie: 'a=b',
    'proxy-authorization': 'x',
    'x-kz-mesh-user-id': 'forged',
    'x-user-attributes': '{}',
    connection: 'keep-alive, x-secret',
    'x-secret': 's',
    'transfer-encoding': 'chunked',
    host: 'h',
    accept: 'text/event-stream',
    'content-type': 'application/json',
    'x-kz-federation-credential': 'kept',
  });
  assert.deepEqual(out, {
    accept: 'text/event-stream',
    'content-type': 'application/json',
    'x-kz-federation-credential': 'kept',
  });
});

test('hardening negotiation keeps only what both sides offer', () => {
  const offered = ['nonce', 'body-sha256', 'future'];
  assert.deepEqual(negotiateFeatures(offered, ['body-sha256', 'nonce'], 'fed-1'), ['nonce', 'body-sha256']);
  assert.deepEqual(negotiateFeatures([], ['nonce'], 'fed-1'), []);
  const all = ['nonce', 'body-sha256', 'federation-id'];
  assert.deepEqual(negotiateFeatures(all, all, 'fed-1'), all);
  assert.deepEqual(negotiateFeatures(all, all, null), ['nonce', 'body-sha256'], 'no peer record id: nothing to name');
});

test('replay cache: once per peer within the window, bounded, shared by every connection to a database', async (t) => {
  const [first, second] = await openTwoConnections(t);
  const cache = new ReplayCache(first, 3);
  const otherProcess = new ReplayCache(second, 3);
  assert.equal(cache.accept('p', 'n1', 100, 10), true);
  assert.equal(cache.accept('p', 'n1', 100, 11), false);
  assert.equal(cache.accept('q', 'n1', 100, 11), true, 'per peer');
  assert.equal(cache.accept('p', 'n1', 100, 100 + NODE_CLOCK_SKEW_SECONDS), false, 'expired here, not on every clock');
  assert.equal(
    cache.accept('p', 'n1', 100, 101 + NODE_CLOCK_SKEW_SECONDS),
    true,
    'expired by every allowed clock: it may come again (the window refuses it anyway)',
  );
  for (const n of ['a', 'b', 'c', 'd']) cache.accept('p', n, 200, 20);
  assert.equal(cache.accept('p', 'd', 200, 21), false);
  assert.equal(otherProcess.accept('p', 'd', 200, 21), false, 'a nonce accepted by one process is refused by another');
  assert.equal(otherProcess.accept('p', 'e', 200, 21), true);
  assert.equal(cache.accept('p', 'e', 200, 22), false);
  for (const n of ['f', 'g', 'h', 'i', 'j', 'k']) assert.equal(cache.accept('p', n, 200, 22), true);
  const rows = first.prepare("SELECT count(*) FROM mesh_replay WHERE peer_id = 'p'").pluck().get() as number;
  // Trimmed every `bound` accepts: at most the bound plus the accepts since the last trim.
  assert.ok(rows <= 6, `the per-peer bound holds (${rows} rows)`);
});

test('replay cache: a clock running ahead neither takes again nor prunes a nonce others would', async (t) => {
  const [ahead, behind] = await openTwoConnections(t);
  const fast = new ReplayCache(ahead, 10_000);
  const slow = new ReplayCache(behind, 10_000);
  const skew = NODE_CLOCK_SKEW_SECONDS - 10;
  assert.equal(slow.accept('p', 'spent', 1000, 900), true);
  // The process ahead sees the nonce expired; enough of its accepts to run its prune of expired rows.
  assert.equal(fast.accept('p', 'spent', 1000 + skew, 1000 + skew), false);
  for (let i = 0; i < 300; i++) fast.accept('p', `other-${i}`, 2000, 1000 + skew);
  assert.equal(
    slow.accept('p', 'spent', 1000, 990),
    false,
    'still spent for the process whose clock takes it as fresh',
  );
});

test('the body guard refuses a body that differs from the signed digest while it is read', async (t) => {
  const server = createServer(async (req, res) => {
    try {
      const body = await readBody(req, 1024);
      res.writeHead(200).end(body);
    } catch (error) {
      res.writeHead(error instanceof ApiError ? error.status : 500).end(error instanceof ApiError ? error.reason : 'x');
    }
  });
  server.prependListener('request', (req) => guardMeshBody(req));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const send = (body: string, digestOf: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const digest = createHash('sha256').update(digestOf).digest('hex');
      const req = request(
        {
          port: (server.address() as AddressInfo).port,
          host: '127.0.0.1',
          method: 'POST',
          headers: { 'x-kz-mesh-signature': 'x', 'x-kz-mesh-body-sha256': digest, 'content-length': body.length },
        },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  assert.deepEqual(await send('{"a":1}', '{"a":1}'), { status: 200, text: '{"a":1}' });
  assert.deepEqual(await send('{"a":2}', '{"a":1}'), { status: 403, text: 'body_digest_mismatch' });
});
