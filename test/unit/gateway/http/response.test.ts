/**
 * gateway/http/response.ts on the plain listener (http.createServer with the gateway's response class, loopback):
 * every head carries the request id once — written implicitly, given whole as an object or as an array, with or
 * without headers set before — and a head or a setHeader that names the id itself keeps its value, as the field
 * set last did when the stage set it with setHeader.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { RequestIdResponse } from '../../../../gateway/http/response.ts';

const ID = 'req-0123456789';

const answers: Record<string, (res: ServerResponse) => void> = {
  '/implicit': (res) => res.end('body'),
  '/object': (res) => res.writeHead(201, { 'content-type': 'text/plain' }).end('body'),
  '/reason': (res) => res.writeHead(202, 'Taken', { 'content-type': 'text/plain' }).end(),
  '/array': (res) => res.writeHead(200, ['content-type', 'text/plain', 'x-extra', 'a']).end(),
  '/set-before': (res) => {
    res.setHeader('cache-control', 'no-store');
    res.writeHead(200, { 'content-type': 'text/plain' }).end();
  },
  '/own-in-head': (res) => res.writeHead(200, { 'x-request-id': 'upstream-own-id' }).end(),
  '/own-mixed-case': (res) => res.writeHead(200, { 'X-Request-Id': 'upstream-own-id' }).end(),
  '/own-in-array': (res) => res.writeHead(200, ['X-Request-Id', 'upstream-own-id']).end(),
  '/own-set': (res) => {
    res.setHeader('x-request-id', 'handler-own-id');
    res.end();
  },
};

async function server(t: { after(fn: () => unknown): void }): Promise<number> {
  const s = createServer({ ServerResponse: RequestIdResponse }, (req, res) => {
    (res as RequestIdResponse).requestId = ID;
    answers[req.url ?? '']?.(res);
  });
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  t.after(() => s.close());
  return (s.address() as AddressInfo).port;
}

/** The raw head lines naming x-request-id (any case), and the status. */
async function head(port: number, path: string): Promise<{ status: number; ids: string[] }> {
  const req = request({ port, host: '127.0.0.1', path, agent: false });
  req.end();
  const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
  res.resume();
  await once(res, 'end');
  const ids: string[] = [];
  for (let i = 0; i < res.rawHeaders.length; i += 2)
    if ((res.rawHeaders[i] as string).toLowerCase() === 'x-request-id') ids.push(res.rawHeaders[i + 1] as string);
  return { status: res.statusCode as number, ids };
}

test('every head carries the request id once, however it is written', async (t) => {
  const port = await server(t);
  for (const [path, status] of [
    ['/implicit', 200],
    ['/object', 201],
    ['/reason', 202],
    ['/array', 200],
    ['/set-before', 200],
  ] as const)
    assert.deepEqual(await head(port, path), { status, ids: [ID] }, path);
});

test('a head or a setHeader naming the request id keeps its own value, once', async (t) => {
  const port = await server(t);
  for (const path of ['/own-in-head', '/own-mixed-case', '/own-in-array'])
    assert.deepEqual((await head(port, path)).ids, ['upstream-own-id'], path);
  assert.deepEqual((await head(port, '/own-set')).ids, ['handler-own-id']);
});
