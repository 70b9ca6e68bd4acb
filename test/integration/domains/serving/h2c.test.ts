/**
 * A replica that speaks cleartext HTTP/2 (`h2c://`, as gRPC inference servers do) behind a runtime URL: many
 * concurrent requests multiplexed on a few connections, `te: trailers` passed on, and the answer's trailers (where
 * gRPC puts its status) reach the client.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Http2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { deploy } from '../../../helpers/upstreams.ts';

test('an h2c replica gets its requests multiplexed on few connections, trailers both ways', async (t) => {
  const sessions = new Set<Http2Session>();
  const seenTe: string[] = [];
  const server = createServer();
  server.on('session', (session) => sessions.add(session));
  server.on('stream', (stream, headers) => {
    seenTe.push(String(headers.te));
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': 'ok' }));
      stream.end(Buffer.concat(chunks));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    for (const session of sessions) session.destroy();
    server.close();
  });
  const gw = await startTestGateway(t);
  const d = await deploy(gw, {
    kind: 'model',
    name: 'triton',
    upstream: `h2c://127.0.0.1:${(server.address() as AddressInfo).port}`,
  });
  const token = await gw.adminToken();
  const calls = Array.from({ length: 64 }, async (_, i) => {
    const res = await request(`${gw.url}${d.runtime_path}/inference.GRPCInferenceService/ModelInfer`, {
      method: 'POST',
      dispatcher: gw.agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/grpc', te: 'trailers' },
      body: `call ${i}`,
    });
    const body = await res.body.text();
    return { status: res.statusCode, body, trailers: res.trailers };
  });
  const answers = await Promise.all(calls);
  answers.forEach((answer, i) => {
    assert.deepEqual([answer.status, answer.body], [200, `call ${i}`]);
    assert.equal(answer.trailers['grpc-status'], '0', 'the trailers reached the client');
  });
  assert.ok(sessions.size <= 4, `${sessions.size} connections carried 64 concurrent calls`);
  assert.ok(
    seenTe.every((te) => te === 'trailers'),
    'te: trailers reached the replica',
  );
});
