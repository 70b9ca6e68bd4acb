/**
 * Egress transport: what crosses the hop, streaming
 * without buffering, and failure mapping. After pairing with a real
 * meshgate, that gateway is stopped and its address taken over by a TLS
 * server holding the same certificate (so the pinned CA still verifies):
 * nothing else can stand still (504) or stream SSE at a chosen pace, since
 * no SSE route of meshgate exists yet (retrieval is another issue). The
 * stand-in verifies the signature with the shared canonical function.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { canonicalizeRequest, pskKey, signatureMatches } from '../../../../gateway/mesh/canonical.ts';
import { MESH } from '../../../../gateway/mesh/headers.ts';
import { startPeer } from '../../../helpers/federation.ts';
import type { After, TestGateway } from '../../../helpers/gateway.ts';
import { pairForMesh } from '../../../helpers/mesh.ts';

const untrusted = (extra: object = {}) => ({
  federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true },
  ...extra,
});

async function standIn(t: After, receiver: TestGateway, handler: Parameters<typeof createServer>[1]): Promise<Server> {
  const tls = join(receiver.dataDir, 'tls');
  const port = receiver.port;
  await receiver.stop();
  const server = createServer(
    { cert: readFileSync(join(tls, 'server.pem')), key: readFileSync(join(tls, 'server-key.pem')) },
    handler,
  );
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve()) && server.closeAllConnections()));
  return server;
}

test('peer down → 502 mesh_proxy_bad_gateway naming the layer', async (t) => {
  const source = await startPeer(t, 'tr-a', untrusted());
  const receiver = await startPeer(t, 'tr-b', untrusted());
  const pair = await pairForMesh(source, receiver, null);
  await receiver.stop();
  const res = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token: await source.adminToken(),
  });
  assert.equal(res.status, 502, res.text);
  assert.equal(res.json.detail.reason, 'mesh_proxy_bad_gateway');
  assert.equal(res.json.detail.layer, 'tcp');
  assert.equal(res.json.detail.cause, 'connection_failed');
});

test('a peer that does not answer → 504 mesh_proxy_timeout after the configured read timeout', async (t) => {
  const source = await startPeer(t, 'slow-a', untrusted({ mesh: { proxyReadTimeoutSeconds: 0.5 } }));
  const receiver = await startPeer(t, 'slow-b', untrusted());
  const pair = await pairForMesh(source, receiver, null);
  await standIn(t, receiver, () => {});
  const started = Date.now();
  const res = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token: await source.adminToken(),
  });
  assert.equal(res.status, 504, res.text);
  assert.equal(res.json.detail.reason, 'mesh_proxy_timeout');
  assert.ok(Date.now() - started < 5000);
});

test('egress rebuilds the headers, signs them, and streams SSE event by event', async (t) => {
  const source = await startPeer(t, 'sse-a', untrusted());
  const receiver = await startPeer(t, 'sse-b', untrusted());
  const pair = await pairForMesh(source, receiver, null);
  let seen: Record<string, string | string[] | undefined> = {};
  let verified = false;
  await standIn(t, receiver, (req, res) => {
    seen = req.headers;
    const h = (name: string) => String(req.headers[name] ?? '');
    const canonical = canonicalizeRequest({
      sourceClusterId: h(MESH.sourceClusterId),
      userId: h(MESH.userId),
      roles: h(MESH.userRoles),
      route: h(MESH.route),
      method: req.method ?? '',
      uri: (req.url ?? '').split('?')[0] as string,
      ts: Number(h(MESH.ts)),
      peerToken: h(MESH.peerToken) || undefined,
      userAttributes: h(MESH.userAttributes) || undefined,
      bodySha256: h(MESH.bodySha256),
      nonce: h(MESH.nonce),
      federationId: h(MESH.federationId),
    });
    verified = signatureMatches(pskKey(pair.psk), canonical, h(MESH.signature));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let n = 0;
    const timer = setInterval(() => {
      res.write(`event: chunk\ndata: {"n":${n}}\n\n`);
      if (++n === 5) {
        clearInterval(timer);
        res.end();
      }
    }, 150);
  });
  const { token, id } = await source.userToken('carol', { attributes: { clearance: 'S' } });
  const started = Date.now();
  const res = await request(
    `${source.gateway.httpsUrl}/api/mesh/${pair.sourceFedId}/runtime/models/m1/v1/chat/completions?stream=true`,
    {
      method: 'GET',
      dispatcher: source.agent,
      headers: {
        authorization: `Bearer ${token}`,
        cookie: 'access_token=secret',
        'proxy-authorization': 'Basic eA==',
        'x-user-attributes': '{"clearance":"TS"}',
        'x-kz-mesh-user-id': 'forged',
        'x-kz-mesh-route': 'forged',
        accept: 'text/event-stream',
      },
    },
  );
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'text/event-stream');
  const arrivals: number[] = [];
  let text = '';
  for await (const chunk of res.body) {
    arrivals.push(Date.now() - started);
    text += String(chunk);
  }
  assert.equal(text.match(/event: chunk/g)?.length, 5);
  assert.ok(arrivals.length >= 3, `events arrived in ${arrivals.length} reads: streamed, not buffered`);
  assert.ok(
    (arrivals.at(-1) as number) - (arrivals[0] as number) >= 300,
    'the first event arrived well before the last',
  );
  assert.equal(verified, true, 'the stand-in verified the signature with the PSK');
  assert.equal(seen.authorization, undefined);
  assert.equal(seen.cookie, undefined);
  assert.equal(seen['proxy-authorization'], undefined);
  assert.equal(seen['x-user-attributes'], undefined);
  assert.equal(seen[MESH.userId], id);
  assert.equal(seen[MESH.peerToken], token);
  assert.equal(seen[MESH.route], pair.sourceClusterId);
  assert.equal(seen[MESH.userAttributes], '{"clearance":"S"}');
  assert.equal(seen[MESH.sourceClusterId], pair.sourceClusterId);
  assert.match(String(seen[MESH.nonce]), /^[0-9a-f]{32}$/);
  assert.equal(seen[MESH.federationId], pair.receiverFedId, "the signed envelope names the receiver's record");
  assert.equal(seen.host, `sse-b.test:${receiver.port}`);
});
