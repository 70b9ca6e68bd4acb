/**
 * An answer the gateway writes raw on the socket, for a request whose head was parsed and whose body never came
 * whole (a request timeout here; a malformed chunk takes the same path, http/client-errors.ts), is logged and counted
 * with the status the client read, not as a client that left (499).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { test } from 'node:test';
import { connect } from 'node:tls';
import { startTestGateway } from '../../../helpers/gateway.ts';

test('a body that never finishes is answered 408 on the socket, and its access line says 408', async (t) => {
  const gw = await startTestGateway(t, { limits: { headersTimeoutMs: 400, requestTimeoutMs: 800 } });
  const requestId = randomUUID();
  const port = Number(new URL(gw.url).port);
  const socket = connect({
    host: '127.0.0.1',
    port,
    servername: 'localhost',
    ca: gw.gateway.caPem,
    ALPNProtocols: ['http/1.1'],
  });
  t.after(() => socket.destroy());
  socket.on('error', () => {});
  await once(socket, 'secureConnect');
  let answer = '';
  socket.setEncoding('utf8').on('data', (chunk) => {
    answer += chunk;
  });
  // The head whole, then one chunk of a body whose end never comes.
  socket.write(
    `POST /api/auth/token HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: ${requestId}\r\n` +
      'Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nusern\r\n',
  );
  await once(socket, 'close');
  assert.match(answer, /^HTTP\/1\.1 408 /, 'the client read a 408');
  const line = await gw.accessLine(requestId);
  assert.equal(line.status, 408, JSON.stringify(line));
  assert.equal(line.aborted, true);
});
