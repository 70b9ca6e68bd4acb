/**
 * A websocket through a runtime URL is observed like any request, because it runs the same pipeline: one access
 * line when the connection ends (status 101, the deployment, the user, the request id its 101 carried), one sample
 * in the request metrics, and one server span continuing the caller's trace, exported to an OTLP receiver that
 * decodes it. A refused upgrade gets its line and its failure reason too.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { request } from 'undici';
import WebSocket from 'ws';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { startOtlpReceiver } from '../../../helpers/peers/otlp.ts';
import { parsePrometheus, total } from '../../../helpers/peers/prometheus.ts';
import { deploy, startAppServer } from '../../../helpers/upstreams.ts';

test('a websocket through a runtime URL yields an access line, a metric sample and a span', async (t) => {
  const otlp = await startOtlpReceiver(t);
  const gw = await startTestGateway(t, { admin: { port: 0 }, tracing: { otlpEndpoint: otlp.url, exportDelayMs: 20 } });
  const app = await startAppServer(t);
  const d = await deploy(gw, { kind: 'app', name: 'observed-ws', upstream: app.url });
  const token = await gw.adminToken();
  const me = (await gw.request('GET', '/api/auth/users/me', { token })).json.sub as string;
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const callerSpan = 'b7ad6b7169203331';

  const ws = new WebSocket(`${gw.url.replace('https', 'wss')}/runtime/apps/${d.id}/ws`, {
    ca: gw.gateway.caPem,
    headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${callerSpan}-01` },
  });
  // 'open' follows 'upgrade' in the same turn: both are awaited from the start.
  const [[upgrade]] = await Promise.all([once(ws, 'upgrade'), once(ws, 'open')]);
  const requestId = String(upgrade.headers['x-request-id']);
  assert.match(requestId, /^[0-9a-f-]{36}$/, 'the 101 carries the request id like any answer');
  ws.send('ping');
  assert.equal(String((await once(ws, 'message'))[0]), 'echo:ping');
  ws.close();
  await once(ws, 'close');

  const line = await gw.accessLine(requestId);
  assert.equal(line.status, 101);
  assert.equal(line.method, 'GET');
  assert.equal(line.path, `/runtime/apps/${d.id}/ws`);
  assert.equal(line.service, 'apps');
  assert.equal(line.deployment, d.id);
  assert.equal(line.user, me);
  assert.equal(line.aborted, false, 'the exchange ended, not a response cut short');
  assert.equal(line.trace_id, traceId);

  const samples = await parsePrometheus(await (await request(`${gw.gateway.adminUrl}/metrics`)).body.text());
  const upgrades = { deployment: d.id, status_class: '1xx', route: '/', service: 'apps' };
  assert.equal(total(samples, 'meshgate_http_request_duration_seconds_count', upgrades), 1);

  const span = await otlp.until((spans) => spans.find((s) => s.traceId === traceId && s.kind === 'SPAN_KIND_SERVER'));
  assert.equal(span.parentSpanId, callerSpan, "the upgrade continues the caller's trace");
  assert.equal(span.name, 'GET /');
  assert.equal(span.attributes['http.response.status_code'], 101);
  assert.deepEqual(otlp.rejected, [], 'every export request decoded');
});

test('a refused upgrade is logged with its reason, and an API path takes no upgrade', async (t) => {
  const gw = await startTestGateway(t);
  const app = await startAppServer(t);
  const d = await deploy(gw, { kind: 'app', name: 'refused-ws', upstream: app.url });
  const wss = gw.url.replace('https', 'wss');
  for (const [target, status, reason] of [
    [`${wss}/runtime/apps/${d.id}/ws`, 401, 'not_authenticated'],
    [`${wss}/api/auth/users/me`, 404, 'route_not_found'],
    [`${wss}/runtime/apps//ws`, 400, 'non_canonical_path'],
  ] as const) {
    const ws = new WebSocket(target, { ca: gw.gateway.caPem });
    ws.on('error', () => {}); // terminating a refused handshake reports it as an error too
    const [, res] = await once(ws, 'unexpected-response');
    assert.equal(res.statusCode, status, target);
    assert.equal(res.headers.connection, 'close', 'a refused upgrade ends its connection');
    const requestId = String(res.headers['x-request-id']);
    ws.terminate();
    const line = await gw.accessLine(requestId);
    assert.equal(line.status, status);
    assert.equal(line.failure, reason);
  }
});
