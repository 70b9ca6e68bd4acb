import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { connect } from 'node:tls';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

/** A raw HTTP/1.1 request over TLS, so paths and headers reach the server exactly as written. */
function rawRequest(gw: TestGateway, head: string, body = ''): Promise<{ status: number; text: string }> {
  const port = Number(new URL(gw.url).port);
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port, servername: 'localhost', ca: gw.gateway.caPem, ALPNProtocols: ['http/1.1'] },
      () => {
        socket.write(`${head}\r\nHost: localhost\r\nConnection: close\r\n\r\n${body}`);
      },
    );
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      data += chunk;
    });
    socket.on('end', () => resolve({ status: Number(data.split(' ')[1]), text: data }));
    socket.on('error', reject);
  });
}

test('non-canonical paths are refused before routing with a stable reason', async (t) => {
  const gw = await startTestGateway(t);
  const cases: [string, string][] = [
    ['/api/../api/ping', 'dot_segment'],
    ['/api/%2e%2e/api/ping', 'dot_segment'],
    ['/api//ping', 'empty_segment'],
    ['/api/ping%00', 'forbidden_character'],
    ['/api/%zz', 'bad_percent_encoding'],
    ['/api/auth/users%2Fme', 'encoded_slash'],
  ];
  for (const [path, problem] of cases) {
    const res = await rawRequest(gw, `GET ${path} HTTP/1.1`);
    assert.equal(res.status, 400, path);
    assert.match(res.text, new RegExp(`"reason":"non_canonical_path","problem":"${problem}"`), path);
  }
});

test('too many headers or too many header bytes answer 431; oversized bodies 413', async (t) => {
  const gw = await startTestGateway(t, { limits: { maxHeaderCount: 20, maxHeaderBytes: 4096, maxBodyBytes: 2048 } });
  const many = Array.from({ length: 30 }, (_, i) => `X-H${i}: v`).join('\r\n');
  const count = await rawRequest(gw, `GET /api/ping HTTP/1.1\r\n${many}`);
  assert.equal(count.status, 431);
  assert.match(count.text, /headers_too_large/);
  const big = await rawRequest(gw, `GET /api/ping HTTP/1.1\r\nX-Big: ${'a'.repeat(5000)}`);
  assert.equal(big.status, 431);
  const body = JSON.stringify({ base_host: `https://${'a'.repeat(3000)}.example` });
  const admin = await gw.adminToken();
  const tooBig = await gw.request('PATCH', '/api/config/routing', {
    token: admin,
    body,
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(tooBig.status, 413);
  assert.equal(tooBig.json.detail.reason, 'body_too_large');
  const chunked = await rawRequest(
    gw,
    `PATCH /api/config/routing HTTP/1.1\r\nAuthorization: ` +
      `Bearer ${admin}\r\nContent-Type: ` +
      `application/json\r\nTransfer-Encoding: chunked`,
    `${(3000).toString(16)}\r\n${'x'.repeat(3000)}\r\n0\r\n\r\n`,
  );
  assert.equal(chunked.status, 413, 'the limit holds without a Content-Length too');
});

test('a client that never finishes its request head is cut off; one that moved on is not', async (t) => {
  const gw = await startTestGateway(t, { limits: { headersTimeoutMs: 300, idleTimeoutMs: 60_000 } });
  const port = Number(new URL(gw.url).port);
  const started = Date.now();
  const closedAfter = await new Promise<number>((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port, servername: 'localhost', ca: gw.gateway.caPem, ALPNProtocols: ['http/1.1'] },
      () => {
        socket.write('GET /api/ping HTTP/1.1\r\nHost: localhost\r\n'); // no blank line: the head never ends
      },
    );
    socket.resume(); // the gateway answers 408 before closing; a socket that never reads that never sees the close
    socket.on('close', () => resolve(Date.now() - started));
    socket.on('error', reject);
    setTimeout(() => {
      resolve(Number.POSITIVE_INFINITY); // still open: the guard failed
      socket.destroy();
    }, 5000).unref();
  });
  assert.ok(closedAfter < 5000, `closed after ${closedAfter} ms`);
  // A keep-alive connection that sent a request is held to the idle timeout instead, so it outlives the head guard:
  // it is still open once a second connection, opened after its answer with an unfinished head, was cut by that guard.
  const { caPem: ca } = gw.gateway;
  const options = { host: '127.0.0.1', port, servername: 'localhost', ca, ALPNProtocols: ['http/1.1'] };
  const socket = connect(options, () => socket.write('GET /api/ping HTTP/1.1\r\nHost: localhost\r\n\r\n'));
  socket.setEncoding('utf8');
  const answered = await once(socket, 'data');
  const unfinished = connect(options, () => unfinished.write('GET /api/ping HTTP/1.1\r\nHost: localhost\r\n'));
  unfinished.resume();
  unfinished.on('error', () => {}); // a reset is a close too
  await new Promise((resolve) => unfinished.once('close', resolve));
  const kept = { state: socket.destroyed ? 'closed' : 'open', data: String(answered[0]) };
  socket.destroy();
  assert.match(kept.data, /^HTTP\/1\.1 200/, 'the request was answered');
  assert.equal(kept.state, 'open', 'and the keep-alive connection outlived the head guard');
});

test('unknown routes, wrong methods and wrong trailing slashes get precise answers', async (t) => {
  const gw = await startTestGateway(t);
  const missing = await gw.request('GET', '/api/nope');
  assert.equal(missing.status, 404);
  assert.equal(missing.json.detail.reason, 'route_not_found');
  assert.ok(missing.json.detail.request_id);
  const method = await gw.request('DELETE', '/api/ping');
  assert.equal(method.status, 405);
  assert.deepEqual(method.json.detail.allowed, ['GET', 'HEAD'], 'HEAD is answered wherever GET is');
  const slash = await gw.request('GET', '/api/ping/?x=1');
  assert.equal(slash.status, 307);
  assert.equal(slash.headers.location, '/api/ping?x=1', 'a relative Location: never derived from the Host header');
});

test('an inbound request id is kept when sane, replaced when not', async (t) => {
  const gw = await startTestGateway(t);
  const kept = await gw.request('GET', '/api/ping', { headers: { 'x-request-id': 'trace-1234abcd' } });
  assert.equal(kept.headers['x-request-id'], 'trace-1234abcd');
  const replaced = await gw.request('GET', '/api/ping', { headers: { 'x-request-id': 'bad id\twith junk' } });
  assert.notEqual(replaced.headers['x-request-id'], 'bad id\twith junk');
});

test('the access log has one line per request with no query string and no credentials', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  await gw.request('POST', '/api/auth/refresh?refresh_token=SECRET-REFRESH-VALUE');
  await gw.request('GET', '/api/auth/users/me', { token: admin });
  const lines = gw.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
  assert.ok(lines.some((l) => l.path === '/api/auth/refresh' && l.status === 401));
  assert.ok(lines.some((l) => l.path === '/api/auth/users/me' && l.status === 200 && l.user));
  const all = gw.logs.join('');
  assert.ok(!all.includes('SECRET-REFRESH-VALUE'));
  assert.ok(!all.includes(admin));
});
