/**
 * The deployments registry: admin-only writes, validation,
 * ReBAC-filtered reads, live prefixes in runtime URLs, and `meshgate deploy`
 * against the data dir of a running gateway.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bootDomains } from '../../../../app/domains.ts';
import { AUTHZ } from '../../../../domains/authz/index.ts';
import { deployCommand } from '../../../../domains/serving/cli.ts';
import { loadConfig } from '../../../../gateway/config/load.ts';
import type { CliEnv } from '../../../../gateway/module.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { deploy, startModelServer } from '../../../helpers/upstreams.ts';

test('admins create, read and delete deployments; records carry runtime and OpenAI URLs on the origin', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const created = await gw.request('POST', '/api/serving/deployments', {
    token,
    json: {
      kind: 'model',
      name: 'llama',
      upstream: 'http://127.0.0.1:9/base/',
      timeout_seconds: 30,
      extra_field: 'ignored',
    },
  });
  assert.equal(created.status, 201);
  const d = created.json;
  assert.match(d.id, /^[0-9a-f-]{36}$/);
  assert.deepEqual(
    { ...d, id: undefined, created_at: undefined, m_id: undefined, m_config_id: undefined },
    {
      id: undefined,
      kind: 'model',
      name: 'llama',
      upstream: 'http://127.0.0.1:9/base',
      upstreams: [{ url: 'http://127.0.0.1:9/base', weight: 1 }],
      affinity: 'none',
      retries: 2,
      max_concurrent: null,
      queue_timeout_ms: null,
      rate_limit: null,
      strip_prefix: true,
      websocket: true,
      timeout_seconds: 30,
      requires_auth: true,
      forward_authorization: false,
      visibility: 'private',
      runtime_path: `/runtime/models/${d.id}`,
      url: `${gw.url}/runtime/models/${d.id}`,
      openai_base_url: `${gw.url}/runtime/models/${d.id}/v1`,
      legacy_port: null,
      legacy_url: null,
      created_by: 'admin',
      created_at: undefined,
      health_path: null,
      // Not probed yet, nothing proxied (health-traffic.test.ts).
      health: {
        status: 'unknown',
        reason: null,
        detail: null,
        checked_at: null,
        replicas: [
          {
            index: 0,
            url: 'http://127.0.0.1:9/base',
            weight: 1,
            status: 'unknown',
            ejected: false,
            reason: null,
            detail: null,
            checked_at: null,
          },
        ],
      },
      traffic: { requests: 0, last_request_at: null },
      // What the platform's Python SDK reads (domains/serving/wire.ts;
      // test/integration/domains/retrieval/sdk-python.test.ts).
      m_id: undefined,
      m_config_id: undefined,
      m_name: 'llama',
      status: 'DEPLOYED',
      requested_at: d.created_at,
      deployed_at: d.created_at,
      access_path_prefix: '/runtime/models',
      access_path: `/runtime/models/${d.id}`,
      lb_port: 0,
      instances: [{ id: d.id, deployment_id: d.id, deployed_at: d.created_at, status: 'DEPLOYED' }],
    },
  );
  assert.deepEqual([d.m_id, d.m_config_id], [d.id, d.id]);
  // The probe may have run meanwhile: health aside, the record reads back as created.
  const unprobed = (record: any) => ({ ...record, health: undefined });
  assert.deepEqual(
    unprobed((await gw.request('GET', `/api/serving/deployments/${d.id}`, { token })).json),
    unprobed(d),
  );
  assert.equal(
    (
      await gw.request('POST', '/api/serving/deployments', {
        token,
        json: { kind: 'model', name: 'llama', upstream: 'http://127.0.0.1:9' },
      })
    ).status,
    409,
  );
  const app = await deploy(gw, { kind: 'app', name: 'llama', upstream: 'https://app.internal:8443' });
  assert.equal(app.runtime_path, `/runtime/apps/${app.id}`);
  const listed = await gw.request('GET', '/api/serving/deployments?kind=all', { token });
  assert.deepEqual(
    listed.json.map((x: { id: string }) => x.id),
    [d.id, app.id],
  );
  const models = await gw.request('GET', '/api/serving/deployments', { token });
  assert.deepEqual(
    models.json.map((x: { id: string }) => x.id),
    [d.id],
    'without ?kind the listing is the models one',
  );
  assert.equal((app as { m_id?: string }).m_id, undefined, 'SDK model fields on models only');
  assert.deepEqual(
    unprobed((await gw.request('GET', `/api/serving/deployment/${d.id}`, { token })).json),
    unprobed(d),
    "the SDK's get_deployment path",
  );
  const apps = await gw.request('GET', '/api/serving/deployments?kind=app', { token });
  assert.deepEqual(
    apps.json.map((x: { id: string }) => x.id),
    [app.id],
  );
  assert.equal((await gw.request('DELETE', `/api/serving/deployments/${d.id}`, { token })).status, 204);
  assert.equal(
    (await gw.request('GET', `/api/serving/deployments/${d.id}`, { token })).json.detail.reason,
    'deployment_not_found',
  );
  assert.equal((await gw.request('DELETE', `/api/serving/deployments/${d.id}`, { token })).status, 404);
});

test('bad deployment bodies are 422 lists; writes need an admin', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const bodies = [
    { kind: 'database', name: 'x', upstream: 'http://127.0.0.1:9' },
    { kind: 'model', name: '', upstream: 'http://127.0.0.1:9' },
    { kind: 'model', name: 'x', upstream: 'ftp://127.0.0.1:9' },
    { kind: 'model', name: 'x', upstream: 'http://user:pw@127.0.0.1:9' },
    { kind: 'model', name: 'x', upstream: 'http://127.0.0.1:9/?q=1' },
    { kind: 'model', name: 'x', upstream: 'http://127.0.0.1:9', timeout_seconds: -1 },
  ];
  for (const json of bodies) {
    const res = await gw.request('POST', '/api/serving/deployments', { token, json });
    assert.equal(res.status, 422, JSON.stringify(json));
    assert.ok(Array.isArray(res.json.detail) && res.json.detail[0].loc[0] === 'body');
    assert.ok(!res.text.includes('pw@'), 'credentials in a rejected URL are not echoed');
  }
  const { token: alice } = await gw.userToken('alice');
  const body = { kind: 'model', name: 'x', upstream: 'http://127.0.0.1:9' };
  assert.equal(
    (await gw.request('POST', '/api/serving/deployments', { token: alice, json: body })).json.detail.reason,
    'admin_required',
  );
  assert.equal((await gw.request('POST', '/api/serving/deployments', { json: body })).status, 401);
  const d = await deploy(gw, body);
  assert.equal((await gw.request('DELETE', `/api/serving/deployments/${d.id}`, { token: alice })).status, 403);
});

test('non-admins see only the models they hold a model relation on, without upstream addresses', async (t) => {
  const gw = await startTestGateway(t);
  const model = await deploy(gw, { kind: 'model', name: 'granted', upstream: 'http://127.0.0.1:9' });
  const other = await deploy(gw, { kind: 'model', name: 'other', upstream: 'http://127.0.0.1:9' });
  const app = await deploy(gw, { kind: 'app', name: 'web', upstream: 'http://127.0.0.1:9' });
  const alice = await gw.userToken('alice');
  assert.deepEqual((await gw.request('GET', '/api/serving/deployments', { token: alice.token })).json, []);
  gw.gateway.deps.services.get(AUTHZ).write([
    {
      subject: { namespace: 'user', id: alice.id },
      relation: 'viewer',
      object: { namespace: 'model', id: model.id },
    },
  ]);
  const listed = await gw.request('GET', '/api/serving/deployments', { token: alice.token });
  assert.deepEqual(
    listed.json.map((x: { id: string }) => x.id),
    [model.id],
  );
  assert.equal(listed.json[0].upstream, undefined);
  assert.equal((await gw.request('GET', `/api/serving/deployments/${model.id}`, { token: alice.token })).status, 200);
  for (const hidden of [other.id, app.id]) {
    assert.equal((await gw.request('GET', `/api/serving/deployments/${hidden}`, { token: alice.token })).status, 404);
    // The SDK's singular paths answer alike: no status for what the caller cannot see.
    assert.equal((await gw.request('GET', `/api/serving/deployment/${hidden}`, { token: alice.token })).status, 404);
    assert.equal(
      (await gw.request('GET', `/api/serving/deployment/${hidden}/status`, { token: alice.token })).status,
      404,
    );
  }
  assert.equal(
    (await gw.request('GET', `/api/serving/deployment/${model.id}/status`, { token: alice.token })).json,
    'DEPLOYED',
  );
  const stop = await gw.request('DELETE', `/api/serving/deployment/${model.id}`, { token: alice.token });
  assert.deepEqual(
    [stop.status, stop.json.detail.reason],
    [403, 'admin_required'],
    "the SDK's stop_deployment is for administrators",
  );
  // Deleting the model removes its grants, so they cannot leak onto anything later.
  assert.equal(
    (await gw.request('DELETE', `/api/serving/deployments/${model.id}`, { token: await gw.adminToken() })).status,
    204,
  );
  assert.deepEqual(gw.gateway.deps.services.get(AUTHZ).list({ objectNs: 'model', objectId: model.id }), []);
});

test('runtime URLs follow the live routing prefixes', async (t) => {
  const gw = await startTestGateway(t);
  const upstream = await startModelServer(t);
  const token = await gw.adminToken();
  const d = await deploy(gw, { kind: 'model', name: 'llm', upstream: upstream.url });
  const patch = await gw.request('PATCH', '/api/config/routing', {
    token,
    json: { service_prefixes: { models: '/ai/models' } },
  });
  assert.equal(patch.status, 200);
  assert.equal(
    (await gw.request('GET', `/api/serving/deployments/${d.id}`, { token })).json.openai_base_url,
    `${gw.url}/ai/models/${d.id}/v1`,
  );
  assert.equal((await gw.request('GET', `/ai/models/${d.id}/v1/models`, { token })).status, 200);
  assert.equal(upstream.lastHeaders?.['x-forwarded-prefix'], `/ai/models/${d.id}`);
  assert.equal((await gw.request('GET', `/runtime/models/${d.id}/v1/models`, { token })).status, 404);
});

function cliEnv(gw: TestGateway, out: string[], err: string[]): CliEnv {
  const config = loadConfig({
    env: {},
    overrides: {
      dataDir: gw.dataDir,
      database: gw.gateway.deps.config.database,
      nodeKeyFile: gw.gateway.deps.config.nodeKeyFile,
      origin: gw.url,
      hostnames: ['localhost'],
    },
  });
  return {
    config,
    boot: (modules) => bootDomains(config, modules, { err: (line) => err.push(line) }),
    readStdin: async () => '',
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  };
}

test('`meshgate deploy` manages deployments on the data dir of a running gateway', async (t) => {
  const gw = await startTestGateway(t);
  const upstream = await startModelServer(t);
  const out: string[] = [];
  const err: string[] = [];
  const env = cliEnv(gw, out, err);
  const add = ['add', '--kind', 'model', '--name', 'cli-llm', '--upstream', upstream.url, '--timeout', '5'];
  add.push('--visibility', 'authenticated');
  assert.equal(await deployCommand.run(add, env), 0, err.join('\n'));
  const record = JSON.parse(out.join('\n'));
  assert.equal(record.openai_base_url, `${gw.url}/runtime/models/${record.id}/v1`);
  assert.equal(record.created_by, 'operator (cli)');
  assert.equal(record.visibility, 'authenticated');
  const token = await gw.adminToken();
  assert.equal(
    (await gw.request('GET', `/runtime/models/${record.id}/v1/models`, { token })).status,
    200,
    'the running gateway serves it',
  );
  const { token: alice } = await gw.userToken('alice');
  const aliceStatus = async () => {
    const res = await gw.request('GET', `/runtime/models/${record.id}/v1/models`, { token: alice });
    return res.status;
  };
  assert.equal(await aliceStatus(), 200, 'shared with every signed-in user');
  out.length = 0;
  assert.equal(await deployCommand.run(['visibility', record.id, 'private'], env), 0, err.join('\n'));
  assert.equal(JSON.parse(out.join('\n')).visibility, 'private');
  // Another process wrote it: the gateway re-reads the row within a second.
  const deadline = Date.now() + 3000;
  while ((await aliceStatus()) !== 404) {
    assert.ok(Date.now() < deadline, 'the running gateway follows the console within a second');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.equal(await deployCommand.run(['visibility', record.id, 'public'], env), 1);
  assert.match(err.join('\n'), /request_validation_failed visibility/);

  out.length = 0;
  assert.equal(await deployCommand.run(['list'], env), 0);
  assert.match(
    out.join('\n'),
    new RegExp(`^${record.id}  model  cli-llm  /runtime/models/${record.id}  -> ${upstream.url}$`),
  );
  assert.equal(await deployCommand.run(['add', '--kind', 'model', '--name', 'bad', '--upstream', 'not a url'], env), 1);
  assert.match(err.join('\n'), /request_validation_failed upstream: must be an http/);
  assert.equal(await deployCommand.run(['remove', record.id], env), 0);
  assert.equal((await gw.request('GET', `/api/serving/deployments/${record.id}`, { token })).status, 404);
  assert.equal(await deployCommand.run(['get', record.id], env), 1);
  // Usage errors are thrown for the CLI's entry point to print and exit 2 (cli.test.ts drives that end to end).
  await assert.rejects(deployCommand.run(['frobnicate'], env), /unknown action 'frobnicate'/);
});
