/**
 * Slow and greedy clients against a real gateway, with raw sockets: a
 * request head trickled a line at a time is cut at the absolute head
 * deadline, a TCP connection that never sends a ClientHello is cut at the
 * handshake deadline, an HTTP/2 session that never opens a stream is cut
 * too, and so is one trickling a later stream's head in CONTINUATION frames, SETTINGS advertise the stream limit, the
 * legacy per-deployment
 * ports carry the same guards. (How a flood shares a deployment with other clients:
 * test/integration/domains/serving/fair-share.test.ts.)
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type ClientHttp2Session, connect as connectHttp2 } from 'node:http2';
import { connect as connectTcp } from 'node:net';
import { test } from 'node:test';
import { connect as connectTls } from 'node:tls';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { deployLegacy, startHoldingServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';

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
  const socket = connectTls({
    host: '127.0.0.1',
    port,
    servername: 'localhost',
    ca: gw.gateway.caPem,
    ALPNProtocols: ['http/1.1'],
  });
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

function h2Session(
  t: { after(fn: () => unknown): void },
  gw: TestGateway,
  port = gw.port,
  localAddress = '127.0.0.1',
): ClientHttp2Session {
  // The whole of 127.0.0.0/8 is loopback: a second local address is a second client as the gateway sees it.
  const createConnection = () =>
    connectTls({
      socket: connectTcp({ host: '127.0.0.1', port, localAddress }),
      servername: 'localhost',
      ca: gw.gateway.caPem,
      ALPNProtocols: ['h2'],
    });
  const session = connectHttp2(`https://127.0.0.1:${port}`, { createConnection });
  session.on('error', () => {});
  t.after(() => session.destroy());
  return session;
}

test('a request head trickled byte by byte is cut at the absolute deadline, not kept alive by each byte', async (t) => {
  const gw = await startTestGateway(t, { limits: GUARDS });
  const { lines, answer } = await trickleHead(gw, gw.port);
  // Lines kept arriving (how many depends on the machine's load: no timing is asserted), and the 408 says the head
  // deadline ended it, not an idle timer, which each line would have reset.
  assert.ok(lines >= 2, `the client was still trickling when cut (${lines} lines sent)`);
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

/** One raw HTTP/2 frame (RFC 9113 §4.1). */
function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

test('HTTP/2: a later stream whose head is trickled in CONTINUATION frames is cut at the head deadline', async (t) => {
  const gw = await startTestGateway(t, { limits: GUARDS });
  const socket = connectTls({
    host: '127.0.0.1',
    port: gw.port,
    servername: 'localhost',
    ca: gw.gateway.caPem,
    ALPNProtocols: ['h2'],
  });
  socket.on('error', () => {}); // the close at the deadline is the expected outcome
  t.after(() => socket.destroy());
  await once(socket, 'secureConnect');
  let received = Buffer.alloc(0);
  let firstAnswered = false;
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    while (received.length >= 9 && received.length >= 9 + received.readUIntBE(0, 3)) {
      const [type, flags, streamId] = [received[3], received[4] as number, received.readUInt32BE(5)];
      // HEADERS or DATA with END_STREAM on stream 1: the first request was answered.
      if (streamId === 1 && (type === 0 || type === 1) && (flags & 0x1) !== 0) firstAnswered = true;
      received = received.subarray(9 + received.readUIntBE(0, 3));
    }
  });
  // HPACK: :method GET (0x82), :scheme https (0x87), literal :path and :authority (RFC 7541 Appendix A indexes 4 and
  // 1).
  const path = Buffer.concat([Buffer.from([0x44, 9]), Buffer.from('/api/ping')]);
  const authority = Buffer.concat([Buffer.from([0x41, 9]), Buffer.from('localhost')]);
  socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
  socket.write(frame(4, 0, 0, Buffer.alloc(0)));
  // END_STREAM | END_HEADERS
  socket.write(frame(1, 0x5, 1, Buffer.concat([Buffer.from([0x82, 0x87]), path, authority])));
  await waitFor(() => firstAnswered);
  // Stream 3: HEADERS without END_HEADERS, then its header value one byte per CONTINUATION frame. At most 7
  // frames: nghttp2 drops a connection after 8 CONTINUATIONs, so a real attacker spaces a few just inside the
  // idle timeout instead (about 87 minutes at the defaults); here they are spaced well past the head deadline.
  const valueStart = Buffer.concat([Buffer.from([0x40, 3]), Buffer.from('x-a'), Buffer.from([0x7f, 0x80, 0x7f])]);
  socket.write(frame(1, 0x1, 3, Buffer.concat([Buffer.from([0x82, 0x87]), path, authority, valueStart])));
  const started = Date.now();
  let sent = 0;
  const ticker = setInterval(() => {
    if (sent < 7 && !socket.destroyed) socket.write(frame(9, 0, 3, Buffer.from('a')));
    sent += 1;
  }, 150);
  try {
    await closed(socket);
  } finally {
    clearInterval(ticker);
  }
  const tookMs = Date.now() - started;
  // Cut near the head deadline (400 ms after stream 1 closed), not at the idle timeout (60 s).
  assert.ok(sent >= 2 && tookMs < 3000, `the head was still trickling when cut (${sent} ticks, ${tookMs} ms)`);
});

test('a legacy per-deployment port has the same handshake, head and stream guards', async (t) => {
  const gw = await startTestGateway(t, {
    limits: { ...GUARDS, maxConcurrentStreams: 5 },
    serving: { legacyPortListeners: true },
  });
  const upstream = await startHoldingServer(t);
  const record = await deployLegacy(gw, { kind: 'app', name: 'legacy-guarded', upstream: upstream.url });
  const port = record.legacy_port as number;
  const { answer } = await trickleHead(gw, port);
  assert.match(answer, /^HTTP\/1\.1 408/);
  await silentTcp(port);
  const [settings] = await once(h2Session(t, gw, port), 'remoteSettings');
  assert.equal(settings.maxConcurrentStreams, 5);
});
