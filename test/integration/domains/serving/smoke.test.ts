/**
 * `meshgate smoke` (what must hold after a routing change) against a running gateway with
 * one model and one app on loopback: it passes, and after a deliberately
 * broken routing PATCH it fails with a precise reason and exit code 1.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { smokeCommand } from '../../../../domains/serving/smoke.ts';
import { loadConfig } from '../../../../gateway/config/load.ts';
import type { CliEnv } from '../../../../gateway/module.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { deploy, startAppServer, startModelServer } from '../../../helpers/upstreams.ts';

async function smoke(gw: TestGateway, args: string[], origin = gw.url): Promise<{ code: number; out: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'smoke-'));
  try {
    writeFileSync(join(dir, 'ca.pem'), gw.gateway.caPem);
    const lines: string[] = [];
    const env: CliEnv = {
      config: loadConfig({ env: {} }),
      boot: () => {
        throw new Error('smoke boots no domain');
      },
      readStdin: async () => '',
      out: (line) => lines.push(line),
      err: (line) => lines.push(line),
    };
    const code = await smokeCommand.run(['--origin', origin, '--cacert', join(dir, 'ca.pem'), ...args], env);
    return { code, out: lines.join('\n') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('smoke passes on a healthy gateway and names the broken item after a bad routing PATCH', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const model = await deploy(gw, { kind: 'model', name: 'llm', upstream: (await startModelServer(t)).url });
  const app = await deploy(gw, { kind: 'app', name: 'web', upstream: (await startAppServer(t)).url });

  const healthy = await smoke(gw, ['--token', token, '--model', model.id, '--app', app.id]);
  assert.equal(healthy.code, 0, healthy.out);
  const lines = healthy.out.split('\n');
  assert.deepEqual(
    lines.map((l) => l.split(/\s+/).slice(0, 2).join(' ')),
    ['PASS home', 'PASS api_ping', 'PASS base_host', 'PASS model', 'PASS app', 'PASS login_redirect', 'PASS logout'],
  );
  assert.match(healthy.out, new RegExp(`GET /runtime/models/${model.id}/v1/models → 200 model list`));

  // Discovery: with only a token, smoke finds a model and an app itself; --json for scripts.
  const discovered = await smoke(gw, ['--token', token, '--json']);
  const report = JSON.parse(discovered.out);
  assert.equal(report.ok, true);
  assert.deepEqual(
    report.checks.map((c: { status: string }) => c.status),
    ['pass', 'pass', 'pass', 'pass', 'pass', 'pass', 'pass'],
  );

  const disable = await gw.request('PATCH', '/api/config/routing', {
    token,
    json: { enabled_services: { models: false } },
  });
  assert.equal(disable.status, 200);
  const broken = await smoke(gw, ['--token', token, '--model', model.id, '--app', app.id]);
  assert.equal(broken.code, 1);
  const failed = broken.out.split('\n').filter((l) => l.startsWith('FAIL'));
  assert.deepEqual(failed, [
    `FAIL  model           GET ` +
      `/runtime/models/${model.id}/v1/models → 404 ` +
      `service_disabled (service=models); routing: ` +
      `enabled_services.models=false`,
  ]);

  await gw.request('PATCH', '/api/config/routing', {
    token,
    json: { enabled_services: { models: true }, service_prefixes: { models: '/ai/models' } },
  });
  const moved = await smoke(gw, ['--token', token, '--model', model.id, '--app', app.id, '--json']);
  assert.equal(moved.code, 1);
  const modelCheck = JSON.parse(moved.out).checks.find((c: { check: string }) => c.check === 'model');
  assert.deepEqual(modelCheck, {
    check: 'model',
    status: 'fail',
    detail:
      `GET /runtime/models/${model.id}/v1/models → 404 route_not_found; routing: models prefix is ` +
      `'/ai/models', not the canonical '/runtime/models'`,
  });
});

test(
  'without a token smoke still checks the public items and skips what ' +
    'needs one; a wrong origin fails the redirect checks',
  async (t) => {
    const gw = await startTestGateway(t);
    const anonymous = await smoke(gw, []);
    assert.equal(anonymous.code, 0, anonymous.out);
    assert.match(anonymous.out, /^SKIP {2}model +no --model given and none listed$/m);
    assert.match(anonymous.out, /^PASS {2}logout +POST \/logout → 303 https:\/\/localhost:\d+\/$/m);

    // The operator expects https://127.0.0.1:<port> but the gateway's configured origin is localhost:
    // redirects and logout land elsewhere, and smoke says so.
    const expected = gw.url.replace('localhost', '127.0.0.1');
    const mismatch = await smoke(gw, ['--token', await gw.adminToken()], expected);
    assert.equal(mismatch.code, 1);
    assert.match(
      mismatch.out,
      new RegExp(
        String.raw`^FAIL {2}base_host +routing base_host is 'https:\/\/localhost:\d+', ` +
          String.raw`not the origin 'https:\/\/127\.0\.0\.1:\d+'$`,
        'm',
      ),
    );
    assert.match(
      mismatch.out,
      new RegExp(
        String.raw`^FAIL {2}logout +POST \/logout → 303 to 'https:\/\/localhost:\d+\/', ` +
          String.raw`expected 303 to https:\/\/127\.0\.0\.1:\d+\/$`,
        'm',
      ),
    );
  },
);
