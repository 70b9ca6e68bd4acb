/**
 * Legacy port-based runtime URLs against a real model
 * server: off by default, and when enabled a deployment's own HTTPS port
 * answers like its path-based URL (same proxy, same auth), collides
 * clearly, closes on delete and reopens on restart.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { request } from 'undici';
import WebSocket from 'ws';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { deployLegacy, startAppServer, startModelServer } from '../../../helpers/upstreams.ts';

async function get(gw: TestGateway, url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers, dispatcher: gw.agent });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

test(
  'legacy ports are off by default: legacy_port is refused with 422 ' + 'legacy_ports_disabled and nothing is created',
  async (t) => {
    const gw = await startTestGateway(t);
    const model = await startModelServer(t);
    const token = await gw.adminToken();
    const res = await gw.request('POST', '/api/serving/deployments', {
      token,
      json: { kind: 'model', name: 'm', upstream: model.url, legacy_port: 40123 },
    });
    assert.equal(res.status, 422);
    assert.equal(res.json.detail.reason, 'legacy_ports_disabled');
    assert.deepEqual((await gw.request('GET', '/api/serving/deployments', { token })).json, []);
    const plain = await gw.request('POST', '/api/serving/deployments', {
      token,
      json: { kind: 'model', name: 'm', upstream: model.url },
    });
    assert.equal(plain.status, 201);
    assert.equal(plain.json.legacy_port, null);
    assert.equal(plain.json.legacy_url, null);
  },
);

test(
  'a legacy port serves the same answers and enforces auth like the ' +
    'path-based URL; collisions are 409; delete closes it, restart reopens ' +
    'it',
  async (t) => {
    const gw = await startTestGateway(t, { serving: { legacyPortListeners: true } });
    const model = await startModelServer(t);
    const token = await gw.adminToken();
    const d = await deployLegacy(gw, { kind: 'model', name: 'llm', upstream: model.url });
    assert.equal(d.legacy_url, `https://localhost:${d.legacy_port}`);
    assert.equal(
      (await gw.request('GET', `/api/serving/deployments/${d.id}`, { token })).json.legacy_url,
      d.legacy_url,
    );

    const auth = { authorization: `Bearer ${token}` };
    const viaPath = await get(gw, `${gw.url}${d.runtime_path}/v1/models`, auth);
    const viaPort = await get(gw, `${d.legacy_url}/v1/models`, auth);
    assert.equal(viaPath.status, 200);
    assert.equal(viaPort.status, 200);
    assert.equal(viaPort.text, viaPath.text);
    assert.equal(model.lastPath, '/v1/models');
    assert.equal(
      model.lastHeaders?.['x-forwarded-port'],
      String(d.legacy_port),
      'the upstream learns the legacy origin',
    );
    assert.equal(model.lastHeaders?.['x-forwarded-prefix'], undefined, 'no prefix on a legacy port');

    // Auth: no credential → 401 on both; a bad bearer → 401; a browser goes to the login page, back to the path-based
    // URL.
    const refusals = [];
    for (const url of [`${gw.url}${d.runtime_path}/v1/models`, `${d.legacy_url}/v1/models`]) {
      const anonymous = await get(gw, url);
      const forged = await get(gw, url, { authorization: 'Bearer not-a-token' });
      refusals.push([
        anonymous.status,
        JSON.parse(anonymous.text).detail,
        forged.status,
        JSON.parse(forged.text).detail,
      ]);
    }
    assert.deepEqual(refusals[0], [401, 'Not authenticated', 401, refusals[0]?.[3]]);
    assert.deepEqual(refusals[1], refusals[0], 'the legacy port refuses exactly like the path-based URL');
    const browser = await get(gw, `${d.legacy_url}/v1/models`, { accept: 'text/html' });
    assert.equal(browser.status, 302);
    assert.equal(browser.headers.location, `${gw.url}/login?next=${encodeURIComponent(`${d.runtime_path}/v1/models`)}`);

    // Collisions: a port another deployment holds, and a port another process holds (the upstream's own).
    const taken = await gw.request('POST', '/api/serving/deployments', {
      token,
      json: { kind: 'model', name: 'other', upstream: model.url, legacy_port: d.legacy_port },
    });
    assert.equal(taken.status, 409);
    assert.equal(taken.json.detail.reason, 'legacy_port_unavailable');
    const busy = await gw.request('POST', '/api/serving/deployments', {
      token,
      json: { kind: 'tool', name: 'busy', upstream: model.url, legacy_port: Number(new URL(model.url).port) },
    });
    assert.equal(busy.status, 409);
    assert.equal(busy.json.detail.reason, 'legacy_port_unavailable');
    assert.equal(
      (await gw.request('GET', '/api/serving/deployments', { token })).json.length,
      1,
      'a refused create leaves no row',
    );

    await gw.restart();
    const restarted = await get(gw, `${d.legacy_url}/v1/models`, { authorization: `Bearer ${await gw.adminToken()}` });
    assert.equal(restarted.status, 200);
    assert.equal(restarted.text, viaPath.text);

    assert.equal(
      (await gw.request('DELETE', `/api/serving/deployments/${d.id}`, { token: await gw.adminToken() })).status,
      204,
    );
    await assert.rejects(
      get(gw, `https://127.0.0.1:${d.legacy_port}/v1/models`),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'ECONNREFUSED');
        return true;
      },
    );
  },
);

test(
  'an app on a legacy port: redirects and cookies stay at the root, ' + 'websockets are relayed with the same auth',
  async (t) => {
    const gw = await startTestGateway(t, { serving: { legacyPortListeners: true } });
    const app = await startAppServer(t);
    const token = await gw.adminToken();
    const d = await deployLegacy(gw, { kind: 'app', name: 'web', upstream: app.url });
    const auth = { authorization: `Bearer ${token}` };
    const session = await request(`${d.legacy_url}/session`, { method: 'POST', headers: auth, dispatcher: gw.agent });
    await session.body.dump();
    assert.equal(session.statusCode, 303);
    assert.equal(session.headers.location, '/dashboard');
    assert.deepEqual(session.headers['set-cookie'], [
      'sid=abc123; Path=/; HttpOnly',
      'pref=dark; Path=/settings; SameSite=Lax',
    ]);
    const absolute = await get(gw, `${d.legacy_url}/absolute-redirect`, auth);
    assert.equal(absolute.headers.location, '/dashboard?from=abs');

    const url = `${d.legacy_url?.replace('https', 'wss')}/ws?room=1`;
    const ws = new WebSocket(url, { ca: gw.gateway.caPem, headers: auth });
    await once(ws, 'open');
    ws.send('ping');
    assert.equal(String((await once(ws, 'message'))[0]), 'echo:ping');
    ws.close();
    await once(ws, 'close');
    assert.equal(app.lastPath, '/ws?room=1');
    const anonymous = new WebSocket(url, { ca: gw.gateway.caPem });
    const [, refused] = await once(anonymous, 'unexpected-response');
    assert.equal(refused.statusCode, 401);
    anonymous.on('error', () => {});
    anonymous.terminate();
  },
);
