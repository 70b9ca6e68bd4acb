/**
 * Apps under their prefix: cookies, redirects and a websocket
 * through the gateway to a real app on loopback; the frontend's home,
 * login and logout pages; operator services only where enabled.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { request } from 'undici';
import WebSocket from 'ws';
import { forgedHostAgent } from '../../../../domains/serving/smoke.ts';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { deploy, startAppServer } from '../../../helpers/upstreams.ts';

test(
  'an app keeps working under its prefix: cookie paths and redirects are ' + 'rewritten, foreign ones left alone',
  async (t) => {
    const gw = await startTestGateway(t);
    const app = await startAppServer(t);
    const d = await deploy(gw, { kind: 'app', name: 'web', upstream: app.url });
    const token = await gw.adminToken();
    const base = `/runtime/apps/${d.id}`;
    const home = await gw.request('GET', `${base}/`, { token });
    assert.equal(home.status, 200);
    assert.match(home.text, /dashboard/);

    const login = await gw.request('POST', `${base}/session`, { token });
    assert.equal(login.status, 303);
    assert.equal(login.headers.location, `${base}/dashboard`);
    assert.deepEqual(login.headers['set-cookie'], [
      `sid=abc123; Path=${base}; HttpOnly`,
      `pref=dark; Path=${base}/settings; SameSite=Lax`,
    ]);

    const dashboard = await gw.request('GET', `${base}/dashboard`, { token, headers: { cookie: 'sid=abc123' } });
    assert.deepEqual(dashboard.json, { cookie: 'sid=abc123' });
    const absolute = await gw.request('GET', `${base}/absolute-redirect`, { token });
    assert.equal(absolute.headers.location, `${base}/dashboard?from=abs`);
    const external = await gw.request('GET', `${base}/external-redirect`, { token });
    assert.equal(external.headers.location, 'https://example.org/elsewhere');

    const headers = await gw.request('GET', `${base}/headers`, { token });
    assert.equal(headers.headers['x-hop'], undefined, 'a header named in Connection is hop-by-hop');
    assert.equal(headers.headers['keep-alive'], undefined);
  },
);

test('an app under a base path that expects the full public path (strip_prefix off)', async (t) => {
  const gw = await startTestGateway(t);
  const app = await startAppServer(t);
  const d = await deploy(gw, { kind: 'app', name: 'web', upstream: app.url, strip_prefix: false });
  const res = await gw.request('GET', `/runtime/apps/${d.id}/dashboard`, { token: await gw.adminToken() });
  assert.equal(res.status, 404, 'the upstream itself answers: it was asked for the full path');
  assert.equal(app.lastPath, `/runtime/apps/${d.id}/dashboard`);
});

test(
  'websockets upgrade through the gateway with a bearer or the session ' +
    'cookie; refused without credentials or when off',
  async (t) => {
    const gw = await startTestGateway(t);
    const app = await startAppServer(t);
    const d = await deploy(gw, { kind: 'app', name: 'live', upstream: app.url });
    const off = await deploy(gw, { kind: 'app', name: 'no-ws', upstream: app.url, websocket: false });
    const token = await gw.adminToken();
    const url = `${gw.url.replace('https', 'wss')}/runtime/apps/${d.id}/ws?room=1`;
    for (const headers of [{ authorization: `Bearer ${token}` }, { cookie: `meshgate_session=${token}` }]) {
      const ws = new WebSocket(url, { ca: gw.gateway.caPem, headers });
      await once(ws, 'open');
      ws.send('ping');
      const [reply] = await once(ws, 'message');
      assert.equal(String(reply), 'echo:ping');
      ws.send(Buffer.from([1, 2, 3]), { binary: true });
      const [binary] = await once(ws, 'message');
      assert.deepEqual([...(binary as Buffer)], [1, 2, 3]);
      ws.close();
      await once(ws, 'close');
    }
    assert.equal(app.lastPath, '/ws?room=1');
    assert.equal(app.lastHeaders?.authorization, undefined);
    assert.equal(app.lastHeaders?.['x-forwarded-prefix'], `/runtime/apps/${d.id}`);

    for (const [target, headers, status] of [
      [url, {}, 401],
      [url.replace(d.id, off.id), { authorization: `Bearer ${token}` }, 400],
      [url.replace(d.id, '00000000-0000-4000-8000-000000000000'), { authorization: `Bearer ${token}` }, 404],
    ] as const) {
      const ws = new WebSocket(target, { ca: gw.gateway.caPem, headers });
      const [, res] = await once(ws, 'unexpected-response');
      assert.equal(res.statusCode, status, target);
      ws.on('error', () => {}); // terminating a refused handshake reports it as an error too
      ws.terminate();
    }
  },
);

test(
  'home page, login and logout: redirects land on the configured origin, ' + 'never on a Host or foreign URL',
  async (t) => {
    const gw = await startTestGateway(t);
    const forged = forgedHostAgent(gw.url, gw.gateway.caPem);
    t.after(() => forged.close());
    const get = async (path: string, headers: Record<string, string> = {}) => {
      const res = await request(`${gw.url}${path}`, {
        dispatcher: forged,
        headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example', ...headers },
      });
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    };
    const home = await get('/');
    assert.equal(home.status, 200);
    assert.match(String(home.headers['content-type']), /^text\/html/);
    assert.ok(home.text.includes(gw.url) && !home.text.includes('evil.example'));
    // The home page is the console's shell: only this origin's files may run (docs/console.md).
    assert.match(String(home.headers['content-security-policy']), /script-src 'self'; /);

    const page = await get('/login?next=/runtime/apps/x/');
    assert.equal(page.status, 200);
    assert.match(page.text, /data-token-url="\/api\/auth\/token"/);
    assert.match(page.text, /data-session-url="\/login\/session\?next=%2Fruntime%2Fapps%2Fx%2F"/);

    const token = await gw.adminToken();
    const cases: [string, string][] = [
      ['/runtime/apps/x/?tab=1', `${gw.url}/runtime/apps/x/?tab=1`],
      ['https://evil.example/steal', `${gw.url}/`],
      ['//evil.example/steal', `${gw.url}/`],
      ['/\\evil.example', `${gw.url}/`],
      [`${gw.url}/runtime/apps/y/`, `${gw.url}/runtime/apps/y/`],
    ];
    for (const [next, expected] of cases) {
      const res = await get(`/login?next=${encodeURIComponent(next)}`, { authorization: `Bearer ${token}` });
      assert.equal(res.status, 302, next);
      assert.equal(res.headers.location, expected, next);
    }

    const session = await gw.request('POST', `/login/session?next=${encodeURIComponent('/runtime/apps/x/')}`, {
      token,
    });
    assert.equal(session.status, 200);
    assert.equal(session.json.location, `${gw.url}/runtime/apps/x/`);
    const cookie = String(session.headers['set-cookie']);
    assert.match(cookie, /^meshgate_session=[^;]+; Path=\/; Max-Age=\d+; Secure; HttpOnly; SameSite=Lax$/);
    assert.equal((await gw.request('POST', '/login/session')).status, 401);
    const viaCookie = await get('/login', { cookie: cookie.split(';')[0] as string });
    assert.equal(viaCookie.headers.location, `${gw.url}/`);

    assert.match(home.text, /<form method="post" action="\/logout">/, 'sign-out is a form: a GET signs nobody out');
    const logout = await request(`${gw.url}/logout`, {
      method: 'POST',
      dispatcher: forged,
      headers: { host: 'evil.example' },
    });
    await logout.body.dump();
    assert.equal(logout.statusCode, 303);
    assert.equal(logout.headers.location, `${gw.url}/`);
    assert.match(String(logout.headers['set-cookie']), /^meshgate_session=; Path=\/; Max-Age=0/);
    assert.equal((await get('/no-such-page')).status, 404);
  },
);

test(
  'browser sign-out is POST only from a page of the origin, and ends the session of the cookie ' +
    'token: its access and refresh tokens',
  async (t) => {
    const gw = await startTestGateway(t);
    await gw.userToken('frank');
    const login = await gw.request('POST', '/api/auth/token', {
      form: { username: 'frank', password: 'frank-password', grant_type: 'password' },
    });
    const { access_token: access, refresh_token: refresh } = login.json as {
      access_token: string;
      refresh_token: string;
    };
    const other = await gw.login('frank', 'frank-password');
    const set = await gw.request('POST', '/login/session', { token: access });
    const cookie = String(set.headers['set-cookie']).split(';')[0] as string;
    const me = async (token: string) => (await gw.request('GET', '/api/auth/users/me', { token })).status;

    const viaGet = await gw.request('GET', '/logout', { headers: { cookie } });
    assert.equal(viaGet.status, 405, 'a cross-site link or image cannot sign anyone out');
    assert.equal(viaGet.json.detail.reason, 'method_not_allowed');
    assert.equal(viaGet.headers['set-cookie'], undefined);
    assert.equal(await me(access), 200);
    // A forged cross-site form carries no SameSite=Lax cookie: only the cookie-less request reaches us, ending nothing.
    assert.equal((await gw.request('POST', '/logout')).status, 303);
    assert.equal(await me(access), 200);
    // One that carries it anyway (a sibling subdomain is the same site) must come from a page of the origin.
    const forgeries: Record<string, string>[] = [
      { cookie, origin: 'https://evil.example' },
      { cookie, origin: 'null' },
      { cookie, 'sec-fetch-site': 'same-origin' },
      { cookie },
    ];
    for (const headers of forgeries) {
      const forged = await gw.request('POST', '/logout', { headers });
      assert.deepEqual([forged.status, forged.json.detail.reason], [403, 'cross_origin_session'], forged.text);
      assert.equal(forged.headers['set-cookie'], undefined);
    }
    assert.equal(await me(access), 200, 'no forged sign-out ended the session');

    const out = await gw.request('POST', '/logout?next=/runtime/apps/x/', { headers: { cookie, origin: gw.url } });
    assert.equal(out.status, 303);
    assert.equal(out.headers.location, `${gw.url}/runtime/apps/x/`);
    assert.equal(await me(access), 401, "the cookie's access token is revoked");
    const refreshed = await gw.request('POST', `/api/auth/refresh?refresh_token=${encodeURIComponent(refresh)}`);
    assert.equal(refreshed.status, 401, "the cookie session's refresh token is revoked");
    const browser = await gw.request('GET', '/login', { headers: { cookie } });
    assert.equal(browser.status, 200, 'the stale cookie no longer signs the browser in');
    assert.equal(await me(other), 200, 'another session of the user (another device) stays');
  },
);

test(
  'notebooks and admin/compute: off unless enabled, 503 without an ' +
    'upstream, proxied with their own gates when configured',
  async (t) => {
    const app = await startAppServer(t);
    const bare = await startTestGateway(t);
    const admin = await bare.adminToken();
    assert.equal(
      (await bare.request('GET', '/admin/compute/', { token: admin })).json.detail.reason,
      'service_disabled',
    );
    const unconfigured = await bare.request('GET', '/notebooks/', { token: admin });
    assert.equal(unconfigured.status, 503);
    assert.equal(unconfigured.json.detail.reason, 'upstream_not_configured');

    const gw = await startTestGateway(t, {
      serving: { notebooksUpstream: app.url, adminComputeUpstream: `${app.url}/` },
    });
    const token = await gw.adminToken();
    const patch = await gw.request('PATCH', '/api/config/routing', {
      token,
      json: { enabled_services: { admin_compute: true } },
    });
    assert.equal(patch.status, 200);
    const { token: alice } = await gw.userToken('alice');
    const notebook = await gw.request('POST', '/notebooks/session', { token: alice });
    assert.equal(notebook.status, 303);
    assert.equal(notebook.headers.location, '/notebooks/dashboard');
    assert.equal((await gw.request('GET', '/notebooks', { token: alice })).headers.location, '/notebooks/');
    const browser = await gw.request('GET', '/notebooks/', { headers: { accept: 'text/html' } });
    assert.equal(browser.headers.location, `${gw.url}/login?next=%2Fnotebooks%2F`);
    assert.equal((await gw.request('GET', '/admin/compute/', { token: alice })).json.detail.reason, 'admin_required');
    const compute = await gw.request('GET', '/admin/compute/dashboard', { token });
    assert.equal(compute.status, 200);
    assert.equal(app.lastHeaders?.['x-forwarded-prefix'], '/admin/compute');
  },
);
