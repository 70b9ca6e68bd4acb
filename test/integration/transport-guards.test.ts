/**
 * Slow and greedy clients against a real gateway, with raw sockets: a
 * request head trickled a line at a time is cut at the absolute head
 * deadline, a TCP connection that never sends a ClientHello is cut at the
 * handshake deadline, an HTTP/2 session that never opens a stream is cut
 * too, SETTINGS advertise the stream limit, the legacy per-deployment
 * ports carry the same guards, and one connection flooding a deployment
 * cannot take the upstream's whole pool from another client.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type ClientHttp2Session, connect as connectHttp2 } from 'node:http2';
import { connect as connectTcp } from 'node:net';
import { test } from 'node:test';
import { connect as connectTls } from 'node:tls';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { deploy, deployLegacy, startHoldingServer } from '../helpers/upstreams.ts';

const GIVE_UP_MS = 10_000;
const GUARDS = { headersTimeoutMs: 400, handshakeTimeoutMs: 400, idleTimeoutMs: 60_000 };

/** Resolves when the socket closes; rejects if it is still open after GIVE_UP_MS (the guard failed). */
function closed(socket: { once(event: 'close', fn: () => void): unknown; destroy(): void }): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`still open after ${GIVE_UP_MS} ms`));
    }, GIVE_UP_MS);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Sends a request head one header line every 40 ms, forever; returns how many lines went out before the close. */
async function trickleHead(gw: TestGateway, port: number): Promise<{ lines: number; answer: string }> {
  const socket = connectTls({ host: '127.0.0.1', port, servername: 'localhost', ca: gw.gateway.caPem, ALPNProtocols: ['http/1.1'] });
  socket.on('error', () => {}); // the reset at the deadline is the expected outcome
  await once(socket, 'secureConnect');
  let lines = 0;
  let answer = '';
  socket.on('data', (chunk) => {
    answer += String(chunk);
  });
  socket.write('GET /api/ping HTTP/1.1\r\nHost: localhost\r\n');
  const ticker = setInterval(() => {
    lines += 1;
    if (!socket.destroyed) socket.write(`X-Trickle-${lines}: ${'a'.repeat(8)}\r\n`);
  }, 40);
  try {
    await closed(socket);
  } finally {
    clearInterval(ticker);
  }
  return { lines, answer };
}

async function silentTcp(port: number): Promise<void> {
  const socket = connectTcp({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  await once(socket, 'connect');
  await closed(socket);
}

function h2Session(t: { after(fn: () => unknown): void }, gw: TestGateway, port = gw.port, localAddress = '127.0.0.1'): ClientHttp2Session {
  // The whole of 127.0.0.0/8 is loopback: a second local address is a second client as the gateway sees it.
  const createConnection = () =>
    connectTls({ socket: connectTcp({ host: '127.0.0.1', port, localAddress }), servername: 'localhost', ca: gw.gateway.caPem, ALPNProtocols: ['h2'] });
  const session = connectHttp2(`https://127.0.0.1:${port}`, { createConnection });
  session.on('error', () => {});
  t.after(() => session.destroy());
  return session;
}

test('a request head trickled byte by byte is cut at the absolute deadline, not kept alive by each byte', async (t) => {
  const gw = await startTestGateway(t, { limits: GUARDS });
  const { lines, answer } = await trickleHead(gw, gw.port);
  // 40 ms between lines is far inside any idle timer; the head deadline (400 ms) still ended it.
  assert.ok(lines >= 8, `the client was still trickling when cut (${lines} lines sent)`);
  assert.match(answer, /^HTTP\/1\.1 408/, 'the client is told why');
  // A well-behaved client on the same listener is unaffected.
  assert.equal((await gw.request('GET', '/api/ping')).status, 200);
});

test('a TCP connection that never sends a ClientHello is closed at the handshake deadline', async (t) => {
  const gw = await startTestGateway(t, { limits: GUARDS });
  await silentTcp(gw.port);
});

test('HTTP/2: SETTINGS advertise the stream limit; a session that never opens a stream is closed', async (t) => {
  const gw = await startTestGateway(t, { limits: { ...GUARDS, maxConcurrentStreams: 7 } });
  const session = h2Session(t, gw);
  const [settings] = await once(session, 'remoteSettings');
  assert.equal(settings.maxConcurrentStreams, 7);
  await closed(session);
});

test('a legacy per-deployment port has the same handshake, head and stream guards', async (t) => {
  const gw = await startTestGateway(t, { limits: { ...GUARDS, maxConcurrentStreams: 5 }, serving: { legacyPortListeners: true } });
  const upstream = await startHoldingServer(t);
  const record = await deployLegacy(gw, { kind: 'app', name: 'legacy-guarded', upstream: upstream.url });
  const port = record.legacy_port as number;
  const { answer } = await trickleHead(gw, port);
  assert.match(answer, /^HTTP\/1\.1 408/);
  await silentTcp(port);
  const [settings] = await once(h2Session(t, gw, port), 'remoteSettings');
  assert.equal(settings.maxConcurrentStreams, 5);
});

/** GET on a runtime path over an h2 session, answered as status and text. */
function h2Get(session: ClientHttp2Session, path: string, token: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const stream = session.request({ ':path': path, authorization: `Bearer ${token}` });
    let status = 0;
    let body = '';
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      body += chunk;
    });
    stream.on('end', () => resolve({ status, body }));
    stream.on('error', reject);
  });
}

test("a flood of streams on one connection cannot take a deployment's whole upstream pool from another client", async (t) => {
  const share = 2;
  const gw = await startTestGateway(t, { serving: { upstreamConnections: 4, perClientUpstreamRequests: share } });
  const upstream = await startHoldingServer(t);
  const app = await deploy(gw, { kind: 'app', name: 'shared', upstream: upstream.url });
  const token = await gw.adminToken();
  const get = (session: ClientHttp2Session, path: string) => h2Get(session, `/runtime/apps/${app.id}${path}`, token);

  const flooder = h2Session(t, gw);
  let floodDone = 0;
  const flood = Array.from({ length: 20 }, () =>
    get(flooder, '/held').then((answer) => {
      floodDone += 1;
      return answer;
    }),
  );
  await waitFor(() => upstream.held === share);

  // Another client, its own connection: the pool (4) still has room because the flood holds only its share.
  const other = await get(h2Session(t, gw), '/quick');
  assert.deepEqual(other, { status: 200, body: 'quick' });
  assert.equal(floodDone, 0, "the other client's request finished while the whole flood was still pending");
  assert.equal(upstream.maxHeld, share, 'the flooding connection never had more than its share at the upstream');

  upstream.release();
  const answers = await Promise.all(flood);
  assert.ok(
    answers.every((a) => a.status === 200 && a.body === 'held'),
    'the excess waited on its connection and was served',
  );
});

test('many connections from one client address share one bound: another address still reaches the upstream', async (t) => {
  const perAddress = 3;
  const serving = { upstreamConnections: 4, perClientUpstreamRequests: 2, perClientAddressUpstreamRequests: perAddress };
  const gw = await startTestGateway(t, { serving });
  const upstream = await startHoldingServer(t);
  const app = await deploy(gw, { kind: 'app', name: 'shared', upstream: upstream.url });
  const token = await gw.adminToken();
  const get = (session: ClientHttp2Session, path: string) => h2Get(session, `/runtime/apps/${app.id}${path}`, token);

  // Eight connections from 127.0.0.1, two streams each: per connection alone they would take 16 > the pool of 4.
  const flood = Array.from({ length: 8 }, () => h2Session(t, gw)).flatMap((session) => [get(session, '/held'), get(session, '/held')]);
  await waitFor(() => upstream.held === perAddress);

  const other = await get(h2Session(t, gw, gw.port, '127.0.0.2'), '/quick');
  assert.deepEqual(other, { status: 200, body: 'quick' }, 'another address still finds room in the pool');
  assert.equal(upstream.maxHeld, perAddress, 'the address never had more than its share at the upstream');

  upstream.release();
  const answers = await Promise.all(flood);
  assert.ok(answers.every((a) => a.status === 200 && a.body === 'held'));
});

/** Polls a condition every 10 ms (bounded by GIVE_UP_MS): the flood's arrival at the upstream is observable, not timed. */
async function waitFor(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + GIVE_UP_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
