/**
 * `meshgate smoke` against `meshgate serve` as the systemd unit starts it (`--workers auto`), both the shipped
 * artifact (test/helpers/artifact.ts), with one model and one app on loopback: it passes on a healthy gateway,
 * checks the live prefixes after the operator moves them, skips a service the routing turns off, and fails with a
 * precise reason and exit code 1 after a bad routing PATCH. A routing answer that would carry the token to another
 * host is refused.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { ensureTlsMaterial } from '../../../../gateway/tls/material.ts';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { startAppServer, startModelServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';
import {
  ADMIN_PASSWORD,
  adminToken,
  connection,
  type Served,
  serve,
  servedBy,
  workerPids,
} from '../../../helpers/workers.ts';

interface Gateway {
  served: Served;
  caFile: string;
  token: string;
  call: ReturnType<typeof connection>['call'];
}

/** `meshgate serve` with the unit's own worker count, on a scratch data dir; killed and removed when the test ends. */
async function startGateway(t: TestContext): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-smoke-'));
  const started: Served[] = [];
  t.after(async () => {
    for (const served of started) await served.killTree();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  const served = await serve(dir, ['--https-port', '0', '--log-level', 'info'], {
    PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
  });
  started.push(served);
  const admin = connection(served);
  t.after(() => admin.close());
  return { served, caFile: join(dir, 'tls', 'ca.pem'), token: await adminToken(served), call: admin.call };
}

/**
 * Resolves once every worker answers `path` as `settled` says. A write answered by one worker reaches the others
 * through the change feed (docs/operating.md, "Staleness bound"), so each is asked until it has answered so once.
 */
async function untilEveryWorker(
  gw: Gateway,
  path: string,
  settled: (res: { status: number; json: { detail?: { reason?: string } } | null }) => boolean,
): Promise<void> {
  const workers = workerPids(gw.served.child.pid as number).length;
  if (workers === 0) return; // one process: what it answered is already its own table
  const applied = new Set<number>();
  await waitFor(
    async () => {
      const conn = connection(gw.served); // a new connection each time: the kernel spreads them over the workers
      try {
        const res = await conn.call('GET', path, { token: gw.token });
        if (settled(res)) applied.add(await servedBy(gw.served, res.requestId));
      } finally {
        await conn.close();
      }
      return applied.size === workers;
    },
    { timeoutMs: 60_000, what: `every worker (${workers}) to answer ${path} as expected` },
  );
}

async function deploy(gw: Gateway, body: Record<string, unknown>): Promise<{ id: string; runtime_path: string }> {
  const res = await gw.call('POST', '/api/serving/deployments', { token: gw.token, json: body });
  assert.equal(res.status, 201, res.text);
  return res.json;
}

async function patchRouting(gw: Gateway, json: Record<string, unknown>): Promise<void> {
  const res = await gw.call('PATCH', '/api/config/routing', { token: gw.token, json });
  assert.equal(res.status, 200, res.text);
}

/** `meshgate smoke --origin … --cacert …` on the tests' target; its exit code, stdout and stderr. */
async function smoke(
  target: { caFile: string; served?: Served },
  args: string[],
  { env = {}, origin = target.served?.base ?? '' }: { env?: Record<string, string>; origin?: string } = {},
): Promise<{ code: number; out: string; err: string }> {
  try {
    const ran = await execMeshgate(['smoke', '--origin', origin, '--cacert', target.caFile, ...args], env);
    return { code: 0, out: ran.stdout.trim(), err: ran.stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, out: (failed.stdout ?? '').trim(), err: failed.stderr ?? '' };
  }
}

/** "STATUS check" of each output line. */
const verdicts = (out: string) => out.split('\n').map((line) => line.split(/\s+/).slice(0, 2).join(' '));

const ALL_PASS = ['home', 'api_ping', 'base_host', 'model', 'app', 'login_redirect', 'logout'].map((c) => `PASS ${c}`);

test(
  'smoke follows the live routing: it passes on a healthy gateway and after the prefixes move, skips a disabled ' +
    'service, and names what a bad routing PATCH broke',
  async (t) => {
    const gw = await startGateway(t);
    const app = await deploy(gw, { kind: 'app', name: 'web', upstream: (await startAppServer(t)).url });
    const model = await deploy(gw, { kind: 'model', name: 'llm', upstream: (await startModelServer(t)).url });
    // The feed applies changes in order: a worker that serves the model knows the app deployed before it.
    await untilEveryWorker(gw, `${model.runtime_path}/v1/models`, (res) => res.status === 200);
    const named = ['--model', model.id, '--app', app.id];

    const healthy = await smoke(gw, ['--token', gw.token, ...named]);
    assert.equal(healthy.code, 0, `${healthy.out}\n${healthy.err}`);
    assert.deepEqual(verdicts(healthy.out), ALL_PASS);
    assert.match(healthy.out, new RegExp(`GET /runtime/models/${model.id}/v1/models → 200 model list`));

    // Discovery: with only a token (from the environment, as an operator keeps it off the command line), smoke
    // finds a model and an app itself; --json for scripts.
    const discovered = await smoke(gw, ['--json'], { env: { PLATFORM_TOKEN: gw.token } });
    assert.equal(discovered.code, 0, discovered.out);
    const report = JSON.parse(discovered.out);
    assert.equal(report.ok, true);
    assert.deepEqual(
      report.checks.map((c: { check: string; status: string }) => `${c.status.toUpperCase()} ${c.check}`),
      ALL_PASS,
    );

    // A service the operator turns off is not a failure: its check says why it was skipped.
    await patchRouting(gw, { enabled_services: { models: false } });
    await untilEveryWorker(
      gw,
      `${model.runtime_path}/v1/models`,
      (res) => res.json?.detail?.reason === 'service_disabled',
    );
    const disabled = await smoke(gw, ['--token', gw.token, ...named]);
    assert.equal(disabled.code, 0, disabled.out);
    assert.match(disabled.out, /^SKIP {2}model +models is disabled in routing \(enabled_services\.models=false\)$/m);
    assert.deepEqual(
      verdicts(disabled.out),
      ALL_PASS.map((v) => (v === 'PASS model' ? 'SKIP model' : v)),
    );

    // A bad routing PATCH: the public origin is no longer this gateway's. Smoke names that item, and only it.
    await patchRouting(gw, { enabled_services: { models: true }, base_host: 'https://elsewhere.example' });
    await untilEveryWorker(gw, `${model.runtime_path}/v1/models`, (res) => res.status === 200);
    const broken = await smoke(gw, ['--token', gw.token, ...named]);
    assert.equal(broken.code, 1, broken.out);
    assert.deepEqual(
      broken.out.split('\n').filter((l) => l.startsWith('FAIL')),
      [`FAIL  base_host       routing base_host is 'https://elsewhere.example', not the origin '${gw.served.base}'`],
    );

    // The operator moves the models and apps prefixes: smoke checks them where they now are, and passes.
    await patchRouting(gw, { base_host: gw.served.base, service_prefixes: { models: '/m', apps: '/a' } });
    await untilEveryWorker(gw, `/m/${model.id}/v1/models`, (res) => res.status === 200);
    const moved = await smoke(gw, ['--token', gw.token, ...named]);
    assert.equal(moved.code, 0, moved.out);
    assert.deepEqual(verdicts(moved.out), ALL_PASS);
    assert.match(moved.out, new RegExp(`^PASS {2}model +GET /m/${model.id}/v1/models → 200 model list$`, 'm'));
    assert.match(moved.out, new RegExp(`^PASS {2}app +GET /a/${app.id}/ → 200$`, 'm'));
    assert.match(
      moved.out,
      new RegExp(`^PASS {2}login_redirect +signed-in /login lands on ${gw.served.base}/a/${app.id}/;`, 'm'),
    );
    const movedJson = await smoke(gw, ['--json'], { env: { PLATFORM_TOKEN: gw.token } });
    assert.equal(JSON.parse(movedJson.out).ok, true, movedJson.out);

    // Without a token the routing cannot be read: the default prefix is assumed, and the failure says so.
    const blind = await smoke(gw, ['--model', model.id]);
    assert.equal(blind.code, 1, blind.out);
    assert.deepEqual(
      blind.out.split('\n').filter((l) => l.startsWith('FAIL')),
      [
        `FAIL  model           GET /runtime/models/${model.id}/v1/models → 404 route_not_found; routing not read ` +
          `(no --token to read /api/config/routing): the default models prefix was assumed`,
      ],
    );
  },
);

test(
  'without a token smoke still checks the public items and skips what needs one; a wrong origin fails the ' +
    'redirect checks',
  async (t) => {
    const gw = await startGateway(t);
    const anonymous = await smoke(gw, []);
    assert.equal(anonymous.code, 0, anonymous.out);
    assert.match(anonymous.out, /^SKIP {2}base_host +no --token to read \/api\/config\/routing$/m);
    assert.match(anonymous.out, /^SKIP {2}model +no --model given and none listed$/m);
    assert.match(anonymous.out, /^PASS {2}logout +POST \/logout → 303 https:\/\/localhost:\d+\/$/m);

    // The operator expects https://127.0.0.1:<port> but the gateway's configured origin is localhost:
    // redirects and logout land elsewhere, and smoke says so.
    const expected = gw.served.base.replace('localhost', '127.0.0.1');
    const mismatch = await smoke(gw, ['--token', gw.token], { origin: expected });
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

/** Listens on a loopback port; closed when the test ends. */
async function listening(t: TestContext, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `https://localhost:${(server.address() as AddressInfo).port}`;
}

test('a routing answer whose prefix is not a path is refused: the token is sent to no other host', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-smoke-hostile-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tls = await ensureTlsMaterial({ tlsDir: dir, names: ['localhost', '127.0.0.1'], clusterName: 'hostile' });
  const elsewhere: string[] = [];
  const other = await listening(
    t,
    createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
      elsewhere.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
    }),
  );
  // A gateway (or whatever answers at the origin) whose routing puts the models "prefix" on another host:
  // appended to the origin, '@localhost:<port>' would make that host the URL's.
  const hostilePrefix = `@${new URL(other).host}`;
  let origin = '';
  origin = await listening(
    t,
    createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
      if (req.url !== '/api/config/routing') return void res.writeHead(404).end();
      const prefixes = { api: '/api', frontend: '/', models: hostilePrefix, apps: '/runtime/apps' };
      const routing = { base_host: origin, service_prefixes: prefixes, enabled_services: { models: true } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(routing));
    }),
  );

  const ran = await smoke({ caFile: join(dir, 'ca.pem') }, ['--token', 'secret-token', '--model', 'm1'], { origin });
  assert.equal(ran.code, 1, ran.out);
  assert.deepEqual(elsewhere, [], 'nothing reached the other host');
  assert.match(ran.out, /^SKIP {2}base_host +GET \/api\/config\/routing: not a routing configuration$/m);
  assert.match(ran.out, /^FAIL {2}model +GET \/runtime\/models\/m1\/v1\/models → 404; routing not read/m);
});
