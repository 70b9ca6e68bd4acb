/**
 * HTTP/2 uploads answered before they finished (gateway/http/early-response.ts,
 * RFC 9113 §8.1): the gateway's own 401 and an upstream's early 413 both
 * reach the client, whose stream then closes with NO_ERROR instead of
 * hanging on a closed flow-control window; the session stays usable.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type ClientHttp2Session, connect, constants, type OutgoingHttpHeaders } from 'node:http2';
import { test } from 'node:test';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { deploy, startToolServer } from '../../../helpers/upstreams.ts';

const UPLOAD = 256 << 20;

function session(t: { after(fn: () => unknown): void }, gw: TestGateway): ClientHttp2Session {
  const s = connect(gw.url, { ca: gw.gateway.caPem });
  t.after(() => s.close());
  return s;
}

/**
 * Streams up to UPLOAD bytes until the server closes the stream; the status,
 * the close code and how much was written. On RST_STREAM(NO_ERROR) Node's
 * client marks the stream closed and emits 'aborted' (its writable side was
 * open); 'close' would wait for the bytes it still buffers, so the test
 * lets them go itself.
 */
async function uploadUntilClosed(s: ClientHttp2Session, headers: OutgoingHttpHeaders) {
  const stream = s.request({ ':method': 'POST', 'content-type': 'application/octet-stream', ...headers });
  stream.resume();
  const response = once(stream, 'response').then(([h]) => Number(h[':status']));
  const stopped = Promise.race([once(stream, 'aborted'), once(stream, 'close')]);
  const chunk = Buffer.alloc(1 << 20, 1);
  let sent = 0;
  while (sent < UPLOAD && !stream.closed) {
    sent += chunk.length;
    if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), stopped]);
  }
  await stopped;
  const result = { status: await response, closed: stream.closed, rstCode: stream.rstCode, sent };
  stream.destroy();
  return result;
}

async function ping(s: ClientHttp2Session): Promise<number> {
  const stream = s.request({ ':path': '/api/ping' });
  stream.end();
  stream.resume();
  const [headers] = await once(stream, 'response');
  return Number(headers[':status']);
}

test('an HTTP/2 upload the gateway refuses early (401) is stopped with NO_ERROR, the session lives on', {
  timeout: 60_000,
}, async (t) => {
  const gw = await startTestGateway(t);
  const s = session(t, gw);
  const result = await uploadUntilClosed(s, { ':path': '/api/catalog/datasets/' });
  assert.equal(result.status, 401);
  assert.ok(result.closed);
  assert.equal(result.rstCode, constants.NGHTTP2_NO_ERROR);
  assert.ok(result.sent < UPLOAD, `stopped after ${result.sent} of ${UPLOAD} bytes`);
  assert.equal(await ping(s), 200);
});

test('an HTTP/2 upload an upstream answers without reading (413) is stopped with NO_ERROR, the session lives on', {
  timeout: 60_000,
}, async (t) => {
  const gw = await startTestGateway(t);
  const tool = await startToolServer(t);
  const d = await deploy(gw, { kind: 'tool', name: 'uploads', upstream: tool.url });
  const s = session(t, gw);
  const result = await uploadUntilClosed(s, {
    ':path': `/runtime/tools/${d.id}/reject`,
    authorization: `Bearer ${await gw.adminToken()}`,
  });
  assert.equal(result.status, 413);
  assert.ok(result.closed);
  assert.equal(result.rstCode, constants.NGHTTP2_NO_ERROR);
  assert.ok(result.sent < UPLOAD, `stopped after ${result.sent} of ${UPLOAD} bytes`);
  assert.equal(await ping(s), 200);
});
