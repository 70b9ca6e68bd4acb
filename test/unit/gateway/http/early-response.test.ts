/**
 * gateway/http/early-response.ts on a real HTTP/2 server (h2c on loopback):
 * an answer given while the client is still uploading reaches the client
 * whole — body, trailers, END_STREAM — and only then is the upload stopped
 * with RST_STREAM(NO_ERROR), for a body with trailers (a reset queued too
 * early cut them off), a plain body, and a body-less answer.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type ClientHttp2Stream, connect, constants, createServer, type Http2ServerResponse } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { endUnreadUploads } from '../../../../gateway/http/early-response.ts';

const answers: Record<string, (res: Http2ServerResponse) => void> = {
  '/trailers': (res) => {
    res.addTrailers({ 'grpc-status': '7' });
    res.writeHead(200, { 'content-type': 'application/grpc' }).end('body');
  },
  '/body': (res) => res.writeHead(413, { 'content-type': 'text/plain' }).end('too big'),
  '/empty': (res) => res.writeHead(413, { 'content-length': '0' }).end(),
};

async function server(t: { after(fn: () => unknown): void }): Promise<string> {
  const s = createServer((req, res) => answers[req.url]?.(res)); // never reads the request body
  endUnreadUploads(s);
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  t.after(() => s.close());
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

/** Uploads until the stream closes; the order of what the client saw. */
async function upload(url: string, path: string) {
  const session = connect(url);
  const stream: ClientHttp2Stream = session.request({ ':method': 'POST', ':path': path });
  const seen: string[] = [];
  let body = '';
  stream.on('response', (h) => seen.push(`response ${h[':status']}`));
  stream.on('data', (chunk: Buffer) => (body += chunk));
  stream.on('trailers', (h) => seen.push(`trailers ${h['grpc-status']}`));
  stream.on('end', () => seen.push('end'));
  const stopped = new Promise((resolve) => stream.once('aborted', resolve));
  const chunk = Buffer.alloc(64 << 10, 1);
  let sent = 0;
  while (!stream.closed && sent < 256 << 20) {
    sent += chunk.length;
    if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), stopped]);
  }
  await stopped;
  const result = { seen, body, rstCode: stream.rstCode, sent };
  stream.destroy();
  session.close();
  return result;
}

test('body and trailers arrive whole before the upload is stopped with NO_ERROR', async (t) => {
  const r = await upload(await server(t), '/trailers');
  assert.deepEqual(r.seen, ['response 200', 'trailers 7', 'end']);
  assert.equal(r.body, 'body');
  assert.equal(r.rstCode, constants.NGHTTP2_NO_ERROR);
  assert.ok(r.sent < 256 << 20);
});

test('a plain body arrives whole, then the upload is stopped', async (t) => {
  const r = await upload(await server(t), '/body');
  assert.deepEqual(r.seen, ['response 413', 'end']);
  assert.equal(r.body, 'too big');
  assert.equal(r.rstCode, constants.NGHTTP2_NO_ERROR);
});

test('a body-less answer also stops the upload', async (t) => {
  const r = await upload(await server(t), '/empty');
  assert.deepEqual(r.seen, ['response 413', 'end']);
  assert.equal(r.rstCode, constants.NGHTTP2_NO_ERROR);
});
