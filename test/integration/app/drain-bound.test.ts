/**
 * A closing gateway's grace is a bound: a connection accepted before the close but still in its TLS handshake,
 * finished afterwards into an HTTP/2 session kept busy, still ends when the grace does (it is in no list of ready
 * connections taken when the close began), so a client cannot hold a draining worker, and its port, open.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect as h2connect } from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import { test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { startTestGateway } from '../../helpers/gateway.ts';

function ping(session: ClientHttp2Session): Promise<number> {
  return new Promise((resolve) => {
    if (session.destroyed || session.closed) return resolve(0);
    const req = session.request({ ':path': '/api/ping' });
    req.on('response', (headers) => {
      req.resume();
      req.on('end', () => resolve(Number(headers[':status'])));
    });
    req.on('error', () => resolve(0));
    // A stream the session's destruction ends without an error only closes; after an answer, 'end' came first.
    req.on('close', () => resolve(0));
    req.end();
  });
}

test('a session whose TLS handshake straddled the close still ends with the grace', async (t) => {
  const gw = await startTestGateway(t);
  const { hostname, port } = new URL(gw.gateway.httpsUrl);
  const raw = await new Promise<Socket>((resolve) => {
    const socket = netConnect(Number(port), hostname, () => resolve(socket));
  });
  const stopping = gw.stop(); // a grace of 1 s
  const tls = tlsConnect({ socket: raw, ca: gw.gateway.caPem, servername: 'localhost', ALPNProtocols: ['h2'] });
  const session = h2connect(gw.gateway.httpsUrl, { createConnection: () => tls });
  session.on('error', () => {});
  t.after(() => session.destroy());
  let answered = 0;
  let stopped = false;
  void stopping.then(() => {
    stopped = true;
  });
  const deadline = Date.now() + 6000;
  // The client keeps the session busy, as one holding a worker open would.
  while (!stopped && Date.now() < deadline) {
    if ((await ping(session)) === 200) answered++;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(stopped, 'the close ended within its grace, though the client kept the session busy');
  await stopping;
  assert.ok(answered > 0, 'the session was served meanwhile (the case this pins)');
  assert.ok(session.destroyed || session.closed || (await ping(session)) === 0, 'and it is gone now');
});
