import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';

test('GET /api/ping needs no credentials', async (t) => {
  const gw = await startTestGateway(t);
  const res = await gw.request('GET', '/api/ping');
  assert.equal(res.status, 200);
  assert.equal(res.json.status, 'pong');
  assert.ok(!Number.isNaN(Date.parse(res.json.timestamp)));
  assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
});

test('routing config: flat contract shape with the spec defaults, any user may read, anonymous may not', async (t) => {
  const gw = await startTestGateway(t);
  assert.equal((await gw.request('GET', '/api/config/routing')).status, 401);
  const { token } = await gw.userToken('reader');
  const res = await gw.request('GET', '/api/config/routing', { token });
  assert.equal(res.status, 200);
  assert.equal(res.json.mode, 'path');
  assert.equal(res.json.model_routing_method, 'path');
  assert.equal(res.json.base_host, gw.url);
  assert.deepEqual(res.json.service_prefixes, {
    api: '/api',
    frontend: '/',
    models: '/runtime/models',
    apps: '/runtime/apps',
    tools: '/runtime/tools',
    notebooks: '/notebooks',
    admin_compute: '/admin/compute',
  });
  assert.equal(res.json.enabled_services.admin_compute, false);
  assert.equal(res.json.routing.base_host, gw.url, 'mirrored under routing');
  const patch = await gw.request('PATCH', '/api/config/routing', { token, json: { base_host: 'https://x.example' } });
  assert.equal(patch.status, 403);
  assert.equal(patch.json.detail.reason, 'admin_required');
});

test('routing PATCH merges key by key, persists, survives restart', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const res = await gw.request('PATCH', '/api/config/routing', {
    token: admin,
    json: {
      base_host: 'https://platform.example.com',
      service_prefixes: { tools: '/rt/tools' },
      enabled_services: { notebooks: false },
    },
  });
  assert.equal(res.status, 200);
  assert.equal(res.json.base_host, 'https://platform.example.com');
  assert.equal(res.json.service_prefixes.tools, '/rt/tools');
  assert.equal(res.json.service_prefixes.models, '/runtime/models', 'untouched keys kept');
  assert.equal(res.json.enabled_services.notebooks, false);
  const nested = await gw.request('PATCH', '/api/config/routing', {
    token: admin,
    json: { routing: { enabled_services: { admin_compute: true } } },
  });
  assert.equal(nested.json.enabled_services.admin_compute, true, 'fields nested under routing are accepted');
  await gw.restart();
  const after = await gw.request('GET', '/api/config/routing', { token: await gw.adminToken() });
  assert.equal(after.json.base_host, 'https://platform.example.com');
  assert.equal(after.json.service_prefixes.tools, '/rt/tools');
  assert.equal(after.json.enabled_services.admin_compute, true);
  assert.ok(Date.parse(after.json.updated_at) > Date.now() - 60_000);
});

test('a bad routing PATCH answers 422 listing every problem and applies nothing', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const before = (await gw.request('GET', '/api/config/routing', { token: admin })).json;
  const res = await gw.request('PATCH', '/api/config/routing', {
    token: admin,
    json: {
      base_host: 'http://plain.example/path',
      service_prefixes: { models: '/runtime', apps: '/runtime/apps/', tools: 'no-slash', bogus: '/b' },
      enabled_services: { api: false },
    },
  });
  assert.equal(res.status, 422);
  assert.equal(res.json.detail.reason, 'routing_config_invalid');
  const problems: string[] = res.json.detail.problems;
  for (const needle of [
    'https',
    'origin only',
    'service_prefixes.apps',
    'service_prefixes.tools',
    'overlap',
    'bogus',
    'enabled_services.api',
  ]) {
    assert.ok(
      problems.some((p) => p.includes(needle)),
      `problem about ${needle} in ${JSON.stringify(problems)}`,
    );
  }
  assert.deepEqual((await gw.request('GET', '/api/config/routing', { token: admin })).json, before, 'nothing applied');
  const typeError = await gw.request('PATCH', '/api/config/routing', {
    token: admin,
    json: { enabled_services: { models: 'yes' } },
  });
  assert.equal(typeError.status, 422);
  assert.ok(Array.isArray(typeError.json.detail), 'type errors are FastAPI-style lists');
  const notJson = await gw.request('PATCH', '/api/config/routing', {
    token: admin,
    body: '{oops',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(notJson.status, 422);
  assert.equal(notJson.json.detail[0].type, 'json_invalid');
});

test('an accepted PATCH swaps the live route table without a restart', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  assert.notEqual((await gw.request('GET', '/notebooks/x')).json?.detail?.reason, 'service_disabled');
  await gw.request('PATCH', '/api/config/routing', { token: admin, json: { enabled_services: { notebooks: false } } });
  const disabled = await gw.request('GET', '/notebooks/x');
  assert.equal(disabled.status, 404);
  assert.equal(disabled.json.detail.reason, 'service_disabled');
  const moved = await gw.request('PATCH', '/api/config/routing', {
    token: admin,
    json: { service_prefixes: { api: '/platform-api' } },
  });
  assert.equal(moved.status, 200);
  assert.equal((await gw.request('GET', '/platform-api/ping')).json.status, 'pong');
  assert.equal((await gw.request('GET', '/api/ping')).status, 404);
  await gw.request('PATCH', '/platform-api/config/routing', {
    token: admin,
    json: { service_prefixes: { api: '/api' } },
  });
  assert.equal((await gw.request('GET', '/api/ping')).status, 200);
});

test("a PATCH may not give a service the gateway's own paths (sign-in, sign-out, console)", async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const before = (await gw.request('GET', '/api/config/routing', { token: admin })).json;
  for (const [service, prefix, taken] of [
    ['models', '/login', '/login'],
    ['apps', '/logout', '/logout'],
    ['tools', '/login/session', '/login'],
    ['notebooks', '/console', '/console'],
    ['admin_compute', '/console/assets', '/console'],
    ['api', '/login', '/login'],
  ] as const) {
    const body = { service_prefixes: { [service]: prefix } };
    const res = await gw.request('PATCH', '/api/config/routing', { token: admin, json: body });
    assert.equal(res.status, 422, `${service} → ${prefix}`);
    assert.equal(res.json.detail.reason, 'routing_config_invalid');
    assert.deepEqual(res.json.detail.problems, [
      `service_prefixes.${service}: '${prefix}' would take '${taken}', which the gateway serves itself`,
    ]);
    const dryRun = await gw.request('POST', '/api/config/routing/validate', { token: admin, json: body });
    assert.equal(dryRun.json.valid, false);
  }
  assert.deepEqual((await gw.request('GET', '/api/config/routing', { token: admin })).json, before, 'nothing applied');
  const login = await gw.request('GET', '/login', { token: null });
  assert.equal(login.status, 200, 'the login page is still the gateway’s');
  // Paths that only share a first letter or a word are not taken.
  const near = await gw.request('PATCH', '/api/config/routing', {
    token: admin,
    json: { service_prefixes: { notebooks: '/loginx', admin_compute: '/logouts/compute' } },
  });
  assert.equal(near.status, 200, near.text);
});
