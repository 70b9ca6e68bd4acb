/**
 * A replica that speaks cleartext HTTP/2 (`h2c://`, as gRPC inference servers do) behind a runtime URL: many
 * concurrent requests multiplexed on a few connections, `te: trailers` passed on, and the answer's trailers (where
 * gRPC puts its status) reach the client. Then gRPC's reference implementation on both ends: a grpcio server as the
 * replica, a grpcio client calling it through the gateway over TLS with its bearer token.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Http2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { request } from 'undici';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { peerScript } from '../../../helpers/peers/process.ts';
import { deploy } from '../../../helpers/upstreams.ts';

const ECHO = join(import.meta.dirname, '..', '..', '..', 'helpers', 'grpc_echo.py');

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

test('a grpcio client reaches a grpcio server through a runtime URL, answers and status intact', async (t) => {
  const python = await peerScript('grpcio');
  const server = spawn(python, [ECHO, 'server'], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => server.kill('SIGKILL'));
  const [line] = (await once(createInterface({ input: server.stdout }), 'line')) as [string];
  const port = Number(line.split(' ')[1]);
  const gw = await startTestGateway(t);
  const d = await deploy(gw, { kind: 'model', name: 'grpc-echo', upstream: `h2c://127.0.0.1:${port}` });
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-grpc-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'ca.pem'), gw.gateway.caPem);
  const call = async (token: string) => {
    const args = [ECHO, 'client', `127.0.0.1:${gw.port}`, join(dir, 'ca.pem'), token];
    const { stdout } = await promisify(execFile)(python, [...args, `${d.runtime_path}/bench.Echo/Say`, '20']);
    return JSON.parse(stdout);
  };
  const result = await call(await gw.adminToken());
  assert.deepEqual(
    result.answers,
    Array.from({ length: 20 }, (_, i) => `echo call ${i}`),
  );
  // Without a valid credential the gateway answers 401, which gRPC clients read as UNAUTHENTICATED.
  const refused = await call('not-a-token');
  assert.equal(refused.error?.code, 'UNAUTHENTICATED', JSON.stringify(refused));
});
