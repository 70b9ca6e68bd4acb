/**
 * A websocket handshake through a runtime URL that ends without a 101 is logged as what happened: abandoned by the
 * client before the upstream answered, it is 499 (the client closed; no head was sent), `aborted`, counted under
 * `4xx`, and the handshake pending upstream is let go at once rather than at the timeout; refused or dropped by the
 * upstream while the client waits, it is the error status the client read. An ordinary request its client abandons
 * before the answer's head is logged the same way.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { test } from 'node:test';
import tls from 'node:tls';
import { request } from 'undici';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { parsePrometheus, total } from '../../../helpers/peers/prometheus.ts';
import { deploy, startDroppingServer, startHoldingServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';

/**
 * An upstream that holds every websocket handshake unanswered (`held`, `ended` counts those whose connection the
 * gateway closed), or refuses it with 403 under `/refuse`.
 */
async function handshakeUpstream(t: { after(fn: () => unknown): void }) {
  const state = { held: 0, ended: 0, url: '' };
  const sockets = new Set<Socket>();
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    if (req.url?.startsWith('/refuse')) {
      socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      return;
    }
    state.held++;
    sockets.add(socket);
    // Read, so that the gateway's end of the connection is seen (an upgraded socket is handed over unread).
    socket.on('error', () => {}).resume();
    socket.once('end', () => {
      state.ended++;
      socket.destroy();
      sockets.delete(socket);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

/** One request on its own TLS connection, with the request id given; the status line read, or null if none came. */
async function rawRequest(
  gw: TestGateway,
  path: string,
  token: string,
  { upgrade, leaveOnce }: { upgrade: boolean; leaveOnce?: () => boolean | Promise<boolean> },
) {
  const requestId = randomUUID();
  const socket = tls.connect({ host: '127.0.0.1', port: gw.port, servername: 'localhost', ca: gw.gateway.caPem });
  await once(socket, 'secureConnect');
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  const handshake = upgrade
    ? 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
    : '';
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nX-Request-Id: ${requestId}\r\n` +
      `${handshake}\r\n`,
  );
  if (leaveOnce) {
    await waitFor(leaveOnce, { what: 'the request to reach the upstream' });
    socket.destroy();
  } else await once(socket, 'close');
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1];
  return { requestId, status: status === undefined ? null : Number(status) };
}

test('a handshake the client abandons before the 101 is logged 499, and let go upstream', async (t) => {
  const gw = await startTestGateway(t, { admin: { port: 0 } });
  const token = await gw.adminToken();
  const upstream = await handshakeUpstream(t);
  const d = await deploy(gw, { kind: 'app', name: 'abandoned-ws', upstream: upstream.url });

  const { requestId, status } = await rawRequest(gw, `${d.runtime_path}/ws`, token, {
    upgrade: true,
    leaveOnce: () => upstream.held === 1,
  });
  assert.equal(status, null, 'nothing was answered');
  const line = await gw.accessLine(requestId);
  assert.equal(line.status, 499);
  assert.equal(line.aborted, true);
  assert.equal(line.deployment, d.id);
  assert.equal(line.failure, undefined, 'the upstream did nothing wrong');
  await waitFor(() => upstream.ended === 1, { what: 'the pending handshake upstream to be closed' });

  const counted = await parsePrometheus(await (await request(`${gw.gateway.adminUrl}/metrics`)).body.text());
  const series = { deployment: d.id, route: '/', service: 'apps' };
  assert.equal(total(counted, 'meshgate_http_request_duration_seconds_count', { ...series, status_class: '4xx' }), 1);
  assert.equal(total(counted, 'meshgate_http_request_duration_seconds_count', { ...series, status_class: '2xx' }), 0);
  assert.equal(total(counted, 'meshgate_upstream_errors_total', { deployment: d.id }), 0);
});

test('a handshake the upstream refuses or drops is logged with the status the client read', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const upstream = await handshakeUpstream(t);
  const refusing = await deploy(gw, { kind: 'app', name: 'refusing-ws', upstream: `${upstream.url}/refuse` });
  const dropping = await deploy(gw, { kind: 'app', name: 'dropping-ws', upstream: await startDroppingServer(t) });
  for (const d of [refusing, dropping]) {
    const { requestId, status } = await rawRequest(gw, `${d.runtime_path}/ws`, token, { upgrade: true });
    assert.equal(status, 502, d.runtime_path);
    const line = await gw.accessLine(requestId);
    assert.equal(line.status, 502);
    assert.equal(line.failure, 'upstream_bad_response');
    assert.equal(line.aborted, false);
  }
});

test('an ordinary request its client abandons before the head is logged 499 too', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const holding = await startHoldingServer(t);
  const d = await deploy(gw, { kind: 'app', name: 'abandoned-get', upstream: holding.url });
  const { requestId, status } = await rawRequest(gw, `${d.runtime_path}/held`, token, {
    upgrade: false,
    leaveOnce: () => holding.held === 1,
  });
  assert.equal(status, null);
  const line = await gw.accessLine(requestId);
  assert.equal(line.status, 499);
  assert.equal(line.aborted, true);
});
