/**
 * The edges of upgrades and the session cookie now that websockets run the request pipeline: an upstream whose 101
 * carries framing headers a 1xx may not have is relayed without them (and cannot take the gateway down); an upgrade
 * pipelined behind an answer waits for it; the frontend upstream is never told the caller from a cookie alone.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import tls from 'node:tls';
import WebSocket from 'ws';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { deploy, startAppServer } from '../../../helpers/upstreams.ts';

/** An upstream answering every upgrade with a 101 that also carries `Trailer` and `Content-Length`, then echoing. */
async function oddHandshakeUpstream(t: { after(fn: () => unknown): void }): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req, socket) => {
    const key = String(req.headers['sec-websocket-key']);
    const accept = createHash('sha1');
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        `Sec-WebSocket-Accept: ${accept.update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64')}\r\n` +
        'Trailer: x-late\r\nContent-Length: 10\r\nX-Request-Id: chosen-by-upstream\r\n\r\n',
    );
    socket.on('data', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('a 101 with framing headers is relayed without them; the gateway stays up', async (t) => {
  const gw = await startTestGateway(t);
  const d = await deploy(gw, { kind: 'app', name: 'odd-101', upstream: await oddHandshakeUpstream(t) });
  const token = await gw.adminToken();
  const ws = new WebSocket(`${gw.url.replace('https', 'wss')}/runtime/apps/${d.id}/ws`, {
    ca: gw.gateway.caPem,
    headers: { authorization: `Bearer ${token}` },
  });
  const [[res]] = await Promise.all([once(ws, 'upgrade'), once(ws, 'open')]);
  assert.equal(res.headers.trailer, undefined, 'a 1xx carries no trailer field');
  assert.equal(res.headers['content-length'], undefined, 'a 1xx has no content');
  assert.notEqual(res.headers['x-request-id'], 'chosen-by-upstream', 'the request id is the gateway’s');
  ws.terminate();
  assert.equal((await gw.request('GET', '/api/ping')).status, 200, 'the gateway still answers');
});

test('an upgrade pipelined behind a request is answered after it, in order', async (t) => {
  const gw = await startTestGateway(t);
  const socket = tls.connect({ host: '127.0.0.1', port: gw.port, servername: 'localhost', ca: gw.gateway.caPem });
  t.after(() => socket.destroy());
  await once(socket, 'secureConnect');
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  socket.write(
    'GET /api/ping HTTP/1.1\r\nHost: localhost\r\n\r\n' +
      'GET /runtime/apps/00000000-0000-4000-8000-000000000000/ws HTTP/1.1\r\nHost: localhost\r\n' +
      'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
  );
  await once(socket, 'close');
  const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
  assert.deepEqual(statuses, [200, 401], 'the ping first, then the upgrade’s refusal (no credential)');
});

test('the frontend upstream is told the caller by a bearer only; the operator services take the cookie', async (t) => {
  const app = await startAppServer(t);
  const gw = await startTestGateway(t, { serving: { frontendUpstream: app.url, notebooksUpstream: app.url } });
  const token = await gw.adminToken();
  const login = await gw.request('POST', '/login/session', { token });
  const cookie = String(login.headers['set-cookie']).split(';')[0] as string;

  await gw.request('POST', '/some/action', { token: null, headers: { cookie, origin: 'https://evil.localhost' } });
  assert.equal(app.lastHeaders?.['x-forwarded-user'], undefined, 'a cookie a sibling site made the browser send');
  await gw.request('GET', '/page', { token: null, headers: { cookie } });
  assert.equal(app.lastHeaders?.['x-forwarded-user'], undefined, 'nor a plain navigation');
  await gw.request('GET', '/page', { token });
  const named = app.lastHeaders?.['x-forwarded-user'];
  assert.ok(named, 'a bearer names the caller');

  const notebook = await gw.request('GET', '/notebooks/dashboard', { token: null, headers: { cookie } });
  assert.equal(notebook.status, 200, notebook.text);
  assert.equal(app.lastHeaders?.['x-forwarded-user'], named, 'the operator service takes the cookie');

  // The login page still knows a signed-in browser by its cookie, and sends it on.
  const loginPage = await gw.request('GET', '/login?next=/console/', { token: null, headers: { cookie } });
  assert.equal(loginPage.status, 302);
});

test('a websocket handshake takes the session cookie only from a page of the origin it reaches', async (t) => {
  const gw = await startTestGateway(t);
  const app = await startAppServer(t);
  const d = await deploy(gw, { kind: 'app', name: 'origin-ws', upstream: app.url });
  const cookie = `meshgate_session=${await gw.adminToken()}`;
  const url = `${gw.url.replace('https', 'wss')}/runtime/apps/${d.id}/ws`;
  const handshake = async (origin: string | undefined) => {
    const ws = new WebSocket(url, { ca: gw.gateway.caPem, headers: { cookie }, ...(origin ? { origin } : {}) });
    ws.on('error', () => {}); // terminating a refused handshake reports it as an error too
    const outcome = await Promise.race([
      once(ws, 'open').then(() => 101),
      once(ws, 'unexpected-response').then(([, res]) => res.statusCode as number),
    ]);
    ws.terminate();
    return outcome;
  };
  // A sibling subdomain or another port of the host: the same site, so SameSite=Lax attached the cookie.
  assert.equal(await handshake('https://evil.localhost'), 403);
  assert.equal(await handshake(new URL(gw.url).origin.replace(/:\d+$/, ':1')), 403);
  assert.equal(await handshake(gw.gateway.origin), 101, "the gateway's own pages");
  assert.equal(await handshake(new URL(gw.url).origin), 101, 'the origin the handshake reached');
  assert.equal(await handshake(undefined), 101, 'no Origin: no browser made the handshake');
  const bearer = new WebSocket(url, {
    ca: gw.gateway.caPem,
    origin: 'https://evil.localhost',
    headers: { authorization: `Bearer ${await gw.adminToken()}` },
  });
  await once(bearer, 'open');
  bearer.terminate();
});
