/**
 * Websockets through a runtime URL as shipped (`meshgate serve --workers 2` on the tests' target, the executable
 * by default): the upgrade runs the request pipeline in the worker that took it, so it is echoed end to end and
 * leaves an access line naming that worker with status 101; a handshake without a credential, or carrying the
 * session cookie from another origin of the same site, is refused.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import WebSocket from 'ws';
import { startAppServer } from '../../../helpers/upstreams.ts';
import { adminToken, connection, workersScratch } from '../../../helpers/workers.ts';

test('two workers: a websocket is proxied and logged; no credential or a cross-origin cookie is refused', async (t) => {
  const { serve } = workersScratch(t, 'meshgate-ws-');
  const app = await startAppServer(t);
  const served = await serve(2);
  const token = await adminToken(served);
  const admin = connection(served);
  t.after(() => admin.close());
  const created = await admin.call('POST', '/api/serving/deployments', {
    token,
    json: { kind: 'app', name: 'ws', upstream: app.url },
  });
  assert.equal(created.status, 201, created.text);
  const url = `${served.base.replace('https', 'wss')}${created.json.runtime_path}/ws`;

  const ws = new WebSocket(url, { ca: served.ca, headers: { authorization: `Bearer ${token}` } });
  const [[upgrade]] = await Promise.all([once(ws, 'upgrade'), once(ws, 'open')]);
  ws.send('ping');
  assert.equal(String((await once(ws, 'message'))[0]), 'echo:ping');
  ws.close();
  await once(ws, 'close');
  const requestId = String(upgrade.headers['x-request-id']);
  const line = JSON.parse(await served.waitForLine(new RegExp(`"req_id":"${requestId}"`))) as Record<string, unknown>;
  assert.equal(line.status, 101);
  assert.equal(line.deployment, created.json.id);
  assert.equal(typeof line.worker, 'number', 'the worker that took the upgrade logged it');

  for (const [headers, origin, status] of [
    [{}, undefined, 401],
    [{ cookie: `meshgate_session=${token}` }, 'https://evil.localhost', 403],
  ] as const) {
    const refused = new WebSocket(url, { ca: served.ca, headers, ...(origin ? { origin } : {}) });
    refused.on('error', () => {}); // terminating a refused handshake reports it as an error too
    const [, res] = await once(refused, 'unexpected-response');
    assert.equal(res.statusCode, status);
    refused.terminate();
  }
});
