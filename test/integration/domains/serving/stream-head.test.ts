/**
 * An answer's head reaches the client when the upstream sends it, not with the body's first bytes: a model's stream
 * sends its head at once and its first token after the prompt is processed, and a client waiting on the head (to
 * see the 200 and the event stream, or to time the connection) must not wait for that token too. The upstream here
 * sends its head and holds its body until the test has received the head: a head the gateway held would hold the
 * test forever (its timeout ends it), so the test proves the order, not a duration.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { deploy, Gate } from '../../../helpers/upstreams.ts';

/** `GET /v1/stream`: the head at once, one event and the end once `gate` opens. */
async function startHeadFirstServer(t: { after(fn: () => unknown): void }, gate: () => Gate) {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    void gate().opened.then(() => res.end('data: {"token":"first"}\n\ndata: [DONE]\n\n'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('a streamed answer’s head reaches the client before its first bytes, over HTTP/1.1 and HTTP/2', {
  timeout: 60_000,
}, async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  let gate = new Gate();
  const upstream = await startHeadFirstServer(t, () => gate);
  const d = await deploy(gw, { kind: 'model', name: 'head-first', upstream });
  const h1 = new Agent({ connect: { ca: gw.gateway.caPem }, allowH2: false });
  t.after(() => h1.close());
  for (const [protocol, agent] of [
    ['HTTP/1.1', h1],
    ['HTTP/2', gw.agent],
  ] as const) {
    gate = new Gate();
    // Resolves on the head: the upstream sends nothing more until the gate opens below.
    const res = await request(`${gw.url}/runtime/models/${d.id}/v1/stream`, {
      dispatcher: agent,
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.statusCode, 200, protocol);
    assert.match(String(res.headers['content-type']), /^text\/event-stream/, protocol);
    gate.open();
    assert.equal(await res.body.text(), 'data: {"token":"first"}\n\ndata: [DONE]\n\n', protocol);
  }
});
