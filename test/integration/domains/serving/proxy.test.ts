/**
 * The runtime proxy against real upstreams on loopback: OpenAI-
 * compatible SSE streamed incrementally over HTTP/1.1 and HTTP/2, header
 * hygiene, credentials, large bodies both ways, and upstream failures.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { forgedHostAgent } from '../../../../domains/serving/smoke.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import {
  DEAD_UPSTREAM,
  deploy,
  Gate,
  readGatedCompletion,
  startDroppingServer,
  startModelServer,
  startToolServer,
} from '../../../helpers/upstreams.ts';

function h1Agent(t: { after(fn: () => unknown): void }, gw: TestGateway): Agent {
  const agent = new Agent({ connect: { ca: gw.gateway.caPem }, allowH2: false });
  t.after(() => agent.close());
  return agent;
}

function* chunksOf(buffer: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < buffer.length; i += size) yield buffer.subarray(i, i + size);
}

test(
  'chat completions stream as SSE: the first chunk arrives before the ' + 'upstream finishes, over HTTP/1.1 and HTTP/2',
  async (t) => {
    const gw = await startTestGateway(t);
    const token = await gw.adminToken();
    for (const allowH2 of [false, true]) {
      const gate = new Gate();
      const model = await startModelServer(t, gate);
      const d = await deploy(gw, { kind: 'model', name: `llm-h2-${allowH2}`, upstream: model.url });
      const agent = allowH2 ? gw.agent : h1Agent(t, gw);
      const res = await request(`${gw.url}/runtime/models/${d.id}/v1/chat/completions`, {
        method: 'POST',
        dispatcher: agent,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'test-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/event-stream/);
      assert.equal(await readGatedCompletion(res.body, gate), 'Hello from the model', `protocol h2=${allowH2}`);
    }
  },
);

test(
  'the OpenAI base answers under /runtime/models/<id>/v1 with forwarded ' +
    'headers set by the gateway, credentials withheld',
  async (t) => {
    const gw = await startTestGateway(t);
    const model = await startModelServer(t);
    const d = await deploy(gw, { kind: 'model', name: 'llm', upstream: model.url });
    const token = await gw.adminToken();
    const forged = {
      'x-forwarded-host': 'evil.example',
      'x-forwarded-for': '6.6.6.6',
      'x-kz-mesh-user-id': 'forged',
      'x-user-attributes': '{"clearance":"top"}',
    };
    const list = await gw.request('GET', `/runtime/models/${d.id}/v1/models`, {
      token,
      headers: { ...forged, cookie: `meshgate_session=${token}; theme=dark` },
    });
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.json.data.map((m: { id: string }) => m.id),
      ['test-model'],
    );
    const seen = model.lastHeaders ?? {};
    assert.equal(model.lastPath, '/v1/models');
    assert.equal(seen['x-forwarded-proto'], 'https');
    assert.equal(seen['x-forwarded-host'], new URL(gw.url).host);
    assert.equal(seen['x-forwarded-for'], '127.0.0.1');
    assert.equal(seen['x-forwarded-prefix'], `/runtime/models/${d.id}`);
    assert.equal(seen['x-forwarded-user'], 'admin');
    assert.equal(seen['x-kz-mesh-user-id'], undefined);
    assert.equal(seen['x-user-attributes'], undefined, 'admin has no attributes; a forged header never passes');
    assert.equal(seen.authorization, undefined, 'the platform token stays at the gateway');
    assert.equal(seen.cookie, 'theme=dark', 'the session cookie is stripped, other cookies pass');
    assert.equal(seen['x-request-id'], list.headers['x-request-id']);

    const completion = await gw.request('POST', `/runtime/models/${d.id}/v1/chat/completions`, {
      token,
      json: { model: 'test-model', messages: [] },
    });
    assert.equal(completion.status, 200);
    assert.equal(completion.json.choices[0].message.content, 'Hello from the model');

    const passthrough = await deploy(gw, {
      kind: 'model',
      name: 'llm-auth',
      upstream: model.url,
      forward_authorization: true,
    });
    assert.equal((await gw.request('GET', `/runtime/models/${passthrough.id}/v1/models`, { token })).status, 200);
    assert.equal(model.lastHeaders?.authorization, `Bearer ${token}`);
  },
);

test('credentials: anonymous callers get 401, browsers the login page; a credential without a grant 404', async (t) => {
  const gw = await startTestGateway(t);
  const model = await startModelServer(t);
  const d = await deploy(gw, { kind: 'model', name: 'llm', upstream: model.url });
  const open = await deploy(gw, { kind: 'model', name: 'llm-public', upstream: model.url, requires_auth: false });
  const anonymous = await gw.request('GET', `/runtime/models/${d.id}/v1/models`);
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.headers['www-authenticate'], 'Bearer');
  const forged = forgedHostAgent(gw.url, gw.gateway.caPem);
  t.after(() => forged.close());
  const browser = await request(`${gw.url}/runtime/models/${d.id}/v1/models?x=1`, {
    dispatcher: forged,
    headers: { accept: 'text/html', host: 'evil.example' },
  });
  await browser.body.dump();
  assert.equal(browser.statusCode, 302);
  assert.equal(
    browser.headers.location,
    `${gw.url}/login?next=${encodeURIComponent(`/runtime/models/${d.id}/v1/models?x=1`)}`,
  );
  assert.equal((await gw.request('GET', `/runtime/models/${d.id}/v1/models`, { token: 'not-a-token' })).status, 401);
  const { token: userToken, id: alice } = await gw.userToken('alice');
  const hidden = await gw.request('GET', `/runtime/models/${d.id}/v1/models`, { token: userToken });
  assert.deepEqual([hidden.status, hidden.json.detail.reason], [404, 'deployment_not_found'], 'no grant');
  const grant = {
    subject: { namespace: 'user', id: alice },
    relation: 'viewer',
    object: { namespace: 'model', id: d.id },
  };
  const granted = await gw.request('POST', '/api/auth/tuples', { token: await gw.adminToken(), json: grant });
  assert.equal(granted.status, 204);
  assert.equal((await gw.request('GET', `/runtime/models/${d.id}/v1/models`, { token: userToken })).status, 200);
  assert.equal(
    (
      await gw.request('GET', `/runtime/models/${d.id}/v1/models`, {
        headers: { cookie: `meshgate_session=${userToken}` },
      })
    ).status,
    200,
  );
  assert.equal((await gw.request('GET', `/runtime/models/${open.id}/v1/models`)).status, 200);
});

test('tools: large uploads and downloads stream through byte-exact; JSON calls work', async (t) => {
  const gw = await startTestGateway(t);
  const tool = await startToolServer(t);
  const d = await deploy(gw, { kind: 'tool', name: 'calc', upstream: tool.url });
  const token = await gw.adminToken();
  const run = await gw.request('POST', `/runtime/tools/${d.id}/run`, { token, json: { a: 2, b: 40 } });
  assert.deepEqual(run.json, { tool: 'calculator', result: 42 });

  const upload = Buffer.alloc(48 * 1024 * 1024);
  for (let i = 0; i < upload.length; i += 4096) upload[i] = i % 251;
  const sha256 = createHash('sha256').update(upload).digest('hex');
  // Over HTTP/2 (undici's default here) and HTTP/1.1, with a length and as a stream of unknown length.
  for (const dispatcher of [gw.agent, h1Agent(t, gw)]) {
    for (const body of [upload, Readable.from(chunksOf(upload, 1 << 20))]) {
      const res = await request(`${gw.url}/runtime/tools/${d.id}/upload`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${token}` },
        body,
      });
      assert.deepEqual(await res.body.json(), { bytes: upload.length, sha256 });
    }
  }

  const size = 64 * 1024 * 1024;
  const download = await request(`${gw.url}/runtime/tools/${d.id}/bytes?n=${size}`, {
    dispatcher: gw.agent,
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(download.headers['content-length'], String(size));
  let received = 0;
  for await (const chunk of download.body) received += (chunk as Buffer).length;
  assert.equal(received, size);
});

test(
  'upstream failures map to stable reasons: slow → 504, refused → 502, ' + 'dropped → 502, unknown id → 404',
  async (t) => {
    const gw = await startTestGateway(t);
    const token = await gw.adminToken();
    const model = await startModelServer(t);
    const slow = await deploy(gw, { kind: 'model', name: 'slow', upstream: model.url, timeout_seconds: 0.3 });
    const dead = await deploy(gw, { kind: 'app', name: 'dead', upstream: DEAD_UPSTREAM });
    const dropping = await deploy(gw, { kind: 'tool', name: 'drops', upstream: await startDroppingServer(t) });
    const cases: [string, number, string][] = [
      [`/runtime/models/${slow.id}/slow`, 504, 'upstream_timeout'],
      [`/runtime/apps/${dead.id}/`, 502, 'upstream_unreachable'],
      [`/runtime/tools/${dropping.id}/anything`, 502, 'upstream_bad_response'],
      ['/runtime/models/00000000-0000-4000-8000-000000000000/v1/models', 404, 'deployment_not_found'],
      [`/runtime/apps/${slow.id}/`, 404, 'deployment_not_found'],
      ['/runtime/tools/', 404, 'deployment_not_found'],
    ];
    for (const [path, status, reason] of cases) {
      const res = await gw.request('GET', path, { token });
      assert.equal(res.status, status, `${path}: ${res.text}`);
      assert.equal(res.json.detail.reason, reason, path);
      assert.ok(!res.text.includes('127.0.0.1'), 'the upstream address is not disclosed');
    }
    assert.ok(gw.logs.some((l) => l.includes('upstream_timeout')));
  },
);

test('the bare deployment URL redirects to its directory, keeping the query', async (t) => {
  const gw = await startTestGateway(t);
  const model = await startModelServer(t);
  const d = await deploy(gw, { kind: 'app', name: 'web', upstream: model.url });
  const res = await gw.request('GET', `/runtime/apps/${d.id}?a=1`, { token: await gw.adminToken() });
  assert.equal(res.status, 308);
  assert.equal(res.headers.location, `/runtime/apps/${d.id}/?a=1`);
});
