/**
 * The leak check every test gateway's stop runs (test/helpers/leaks.ts), fed real leaks: each must be named, what
 * was closed must pass, and what another owner holds in the same process at the same time must not be counted.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Server } from 'node:net';
import { test } from 'node:test';
import { startTestGateway } from '../../helpers/gateway.ts';
import { assertNothingLeft, ResourceScope } from '../../helpers/leaks.ts';

const listening = async (server: Server) => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
};

test('a timer, an interval and a listening server left in the scope are each named', async () => {
  const scope = new ResourceScope();
  const server = createServer();
  const timers = scope.run(() => {
    server.listen(0, '127.0.0.1');
    AbortSignal.timeout(60_000); // unref'd, cleared by Node when it fires: not a leak
    return [setTimeout(function forgottenTimer() {}, 60_000), setInterval(function forgottenSweep() {}, 30_000)];
  });
  await once(server, 'listening');
  await assert.rejects(assertNothingLeft(scope, 'the probe'), (error: Error) => {
    assert.match(error.message, /^the probe left behind after close:/);
    assert.match(error.message, /a timer of 60000 ms calling forgottenTimer/);
    assert.match(error.message, /an interval of 30000 ms calling forgottenSweep/);
    assert.match(error.message, /a listening TCP server on 127\.0\.0\.1:\d+/);
    assert.equal(error.message.split('\n').length, 4, 'three leftovers, the AbortSignal timer not among them');
    return true;
  });
  for (const timer of timers) clearTimeout(timer);
  server.close();
  await assertNothingLeft(scope, 'the probe');
});

test('a connection the scope accepted and never closed is named; one the test opened elsewhere is not', async () => {
  const scope = new ResourceScope();
  const accepted: import('node:net').Socket[] = [];
  const server = createServer((socket) => accepted.push(socket));
  // The accepted connection belongs to the scope because the server's handle does: listen() creates it.
  const port = await scope.run(() => listening(server));
  const outsider = createServer();
  const outsiderPort = await listening(outsider);
  const client = connect(port, '127.0.0.1');
  const unrelated = connect(outsiderPort, '127.0.0.1');
  await Promise.all([once(client, 'connect'), once(unrelated, 'connect'), once(server, 'connection')]);
  server.close();
  await assert.rejects(assertNothingLeft(scope, 'the probe'), (error: Error) => {
    assert.match(error.message, new RegExp(`an open TCP connection 127\\.0\\.0\\.1:${port} ↔ 127\\.0\\.0\\.1:\\d+`));
    assert.doesNotMatch(error.message, new RegExp(`:${outsiderPort}`));
    return true;
  });
  for (const socket of accepted) socket.destroy();
  await assertNothingLeft(scope, 'the probe');
  client.destroy();
  unrelated.destroy();
  outsider.close();
});

test('a child process still running, and a grandchild left in its process group, are named', async () => {
  const scope = new ResourceScope();
  // The child starts a grandchild in its group, prints its pid and exits: the grandchild outlives its parent.
  const stdio: ['ignore', 'pipe', 'ignore'] = ['ignore', 'pipe', 'ignore'];
  const child = scope.run(() => spawn('sh', ['-c', 'sleep 30 & echo $!'], { detached: true, stdio }));
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const grandchild = Number(String(line).trim());
  await assert.rejects(assertNothingLeft(scope, 'the probe'), /process \d+ \(sleep\) in group \d+/);
  process.kill(grandchild, 'SIGKILL');
  await assertNothingLeft(scope, 'the probe');
  const stubborn = scope.run(() => spawn('sleep', ['30'], { stdio: 'ignore' }));
  const running = new RegExp(`a running child process, pid ${stubborn.pid}`);
  await assert.rejects(assertNothingLeft(scope, 'the probe'), running);
  stubborn.kill('SIGKILL');
  await assertNothingLeft(scope, 'the probe');
});

test('a test gateway closes everything it opened: connections in flight, HTTP/2 sessions, its timers', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  assert.equal((await gw.request('GET', '/api/ping', { token })).status, 200);
  await gw.stop(); // fails, naming the leftovers, if the gateway leaks
  await gw.start();
  assert.equal((await gw.request('GET', '/api/ping')).status, 200);
});
