/**
 * The console's serving contract without a browser: the shell's strict CSP
 * and no inline code, hashed assets cached for a year, the first-load
 * budget (gzip bytes of everything the shell loads), the console beside a
 * frontend upstream, and the session cookie's CSRF defence on the API.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SESSION_COOKIE } from '../../../../../gateway/http/session-cookie.ts';
import { startTestGateway, type TestGateway } from '../../../../helpers/gateway.ts';
import { startAppServer } from '../../../../helpers/upstreams.ts';

const BUDGET_BYTES = 150 * 1024;

function assetLinks(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
}

test(
  'the shell: strict CSP, no inline script or style, hashed immutable ' + 'assets within the first-load budget',
  async (t) => {
    const gw = await startTestGateway(t);
    const shell = await gw.request('GET', '/', { headers: { accept: 'text/html' } });
    assert.equal(shell.status, 200);
    const csp = String(shell.headers['content-security-policy']);
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.doesNotMatch(shell.text, /<script>|<style>| style="/, 'no inline code');
    assert.match(shell.text, /This platform is served at/, 'the summary stays for a browser without scripts');
    const links = assetLinks(shell.text);
    assert.equal(links.length, 2);
    let total = Buffer.byteLength(shell.text); // the shell itself is counted uncompressed, the worst case
    for (const link of links) {
      assert.match(link, /-[0-9a-f]{16}\.(js|css)$/);
      const asset = await gw.request('GET', link, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(asset.status, 200);
      assert.equal(asset.headers['content-encoding'], 'gzip');
      assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable');
      total += Number(asset.headers['content-length']);
    }
    assert.ok(total <= BUDGET_BYTES, `first load ${total} B > ${BUDGET_BYTES} B`);
    const missing = await gw.request('GET', '/console/assets/console-0000000000000000.js');
    assert.equal(missing.status, 404);
    assert.equal(
      (await gw.request('GET', '/console/', { headers: { accept: 'text/html' } })).headers['content-security-policy'],
      csp,
    );
  },
);

test('with a frontend upstream on /, the console lives under /console/ and everything else is proxied', async (t) => {
  const app = await startAppServer(t);
  const gw = await startTestGateway(t, { serving: { frontendUpstream: app.url } });
  const root = await gw.request('GET', '/', { headers: { accept: 'text/html' } });
  assert.match(root.text, /dashboard/, 'the upstream answers /');
  const shell = await gw.request('GET', '/console/', { headers: { accept: 'text/html' } });
  assert.match(shell.text, /id="app"/);
  assert.equal((await gw.request('GET', assetLinks(shell.text)[0] as string)).status, 200);
});

async function sessionOf(gw: TestGateway): Promise<string> {
  return `${SESSION_COOKIE}=${await gw.adminToken()}`;
}

test('the session cookie authenticates the API only from the gateway origin', async (t) => {
  const gw = await startTestGateway(t);
  const cookie = await sessionOf(gw);
  const origin = gw.url;
  const cases: [string, string, string, Record<string, string>, number, string?][] = [
    ['same-origin fetch GET', 'GET', '/api/whoami', { 'sec-fetch-site': 'same-origin' }, 200],
    [
      'same-origin POST with Origin',
      'POST',
      '/api/config/routing/validate',
      { origin, 'content-type': 'application/json' },
      200,
    ],
    ['no proof at all', 'GET', '/api/whoami', {}, 403, 'cross_origin_session'],
    [
      'cross-site link (Lax sends the cookie)',
      'GET',
      '/api/cluster/federations',
      { 'sec-fetch-site': 'cross-site' },
      403,
      'cross_origin_session',
    ],
    ['same-site sibling origin', 'GET', '/api/whoami', { 'sec-fetch-site': 'same-site' }, 403, 'cross_origin_session'],
    [
      'foreign Origin on a POST',
      'POST',
      '/api/config/routing/validate',
      { origin: 'https://evil.invalid' },
      403,
      'cross_origin_session',
    ],
    [
      'same-origin metadata on a POST without Origin',
      'POST',
      '/api/config/routing/validate',
      { 'sec-fetch-site': 'same-origin' },
      403,
      'cross_origin_session',
    ],
    [
      'Origin "null" (sandboxed frame)',
      'POST',
      '/api/config/routing/validate',
      { origin: 'null' },
      403,
      'cross_origin_session',
    ],
  ];
  for (const [name, method, path, headers, status, reason] of cases) {
    const res = await gw.request(method, path, {
      headers: { cookie, ...headers },
      ...(method === 'POST' ? { json: {} } : {}),
    });
    assert.equal(res.status, status, `${name}: ${res.text}`);
    if (reason) assert.equal(res.json.detail.reason, reason, name);
  }
  const stale = await gw.request('GET', '/api/whoami', {
    headers: { cookie: `${SESSION_COOKIE}=not-a-token`, 'sec-fetch-site': 'same-origin' },
  });
  assert.equal(stale.status, 401);
  // A bearer is unaffected by a foreign cookie-less Origin: the defence is about the cookie only.
  const bearer = await gw.request('GET', '/api/whoami', {
    token: await gw.adminToken(),
    headers: { origin: 'https://evil.invalid' },
  });
  assert.equal(bearer.status, 200);
  assert.ok(!gw.logs.join('').includes((await gw.adminToken()).slice(-20)), 'the token is never logged');
});

test('routing validate is a dry run; smoke runs the CLI checks for administrators only', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const bad = await gw.request('POST', '/api/config/routing/validate', {
    token: admin,
    json: { service_prefixes: { tools: 'no-slash' } },
  });
  assert.equal(bad.status, 200);
  assert.equal(bad.json.valid, false);
  assert.ok(bad.json.problems.length > 0);
  assert.equal(
    (await gw.request('GET', '/api/config/routing', { token: admin })).json.service_prefixes.tools,
    '/runtime/tools',
  );
  const user = await gw.userToken('plain');
  assert.equal((await gw.request('POST', '/api/config/routing/validate', { token: user.token, json: {} })).status, 403);
  assert.equal((await gw.request('POST', '/api/serving/smoke', { token: user.token })).status, 403);
  assert.equal((await gw.request('GET', '/api/auth/users', { token: user.token })).status, 403);
  const users = await gw.request('GET', '/api/auth/users', { token: admin });
  assert.deepEqual(users.json.map((u: any) => u.username).sort(), ['admin', 'plain']);
  assert.ok(!users.text.includes('password'));
  const smoke = await gw.request('POST', '/api/serving/smoke', { token: admin });
  assert.equal(smoke.status, 200, smoke.text);
  assert.equal(smoke.json.ok, true, smoke.text);
  assert.deepEqual(smoke.json.checks.find((c: any) => c.check === 'api_ping').status, 'pass');
});
