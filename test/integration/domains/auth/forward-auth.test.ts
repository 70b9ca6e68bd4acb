/**
 * Forward authentication (/api/auth/validate): the answer a reverse proxy
 * acts on, the attacker's side (forged identity headers, Basic credentials,
 * token echo, guessing), the failure throttle, and a real nginx
 * `auth_request` in front of an upstream, verifying the gateway's TLS against
 * its CA.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { ADMIN_PASSWORD, startTestGateway } from '../../../helpers/gateway.ts';
import { startNginx } from '../../../helpers/peers/nginx.ts';
import { startAppServer } from '../../../helpers/upstreams.ts';

const VALIDATE = '/api/auth/validate';

test(
  'a valid bearer gets 200 with identity headers and never its token ' +
    'back; forged identity headers count for nothing',
  async (t) => {
    const gw = await startTestGateway(t);
    const alice = await gw.userToken('alice', { attributes: { clearance: 'S' } });
    const forged = {
      'x-user-id': 'admin',
      'x-forwarded-user': 'admin',
      'x-user-roles': 'admin',
      'x-user-name': 'admin',
    };
    const res = await gw.request('GET', VALIDATE, { token: alice.token, headers: forged });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['x-user-id'], alice.id);
    assert.equal(res.headers['x-user-name'], 'alice');
    assert.equal(res.headers['x-forwarded-user'], 'alice');
    assert.equal(res.headers['x-user-roles'], '');
    assert.deepEqual(JSON.parse(String(res.headers['x-user-attributes'])), { clearance: 'S' });
    assert.match(String(res.headers['x-user-attributes-hash']), /^[0-9a-f]{64}$/);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['x-auth-token'], undefined);
    assert.ok(
      !JSON.stringify(res.headers).includes(alice.token) && !res.text.includes(alice.token),
      'the token is never echoed',
    );

    // Envoy ext_authz keeps the method and appends the original path; Traefik and nginx send GET.
    for (const [method, path] of [
      ['POST', `${VALIDATE}/app/orders?id=1`],
      ['HEAD', VALIDATE],
      ['DELETE', `${VALIDATE}/x`],
    ] as const) {
      assert.equal((await gw.request(method, path, { token: alice.token })).status, 200, `${method} ${path}`);
    }
    const anonymous = await gw.request('GET', VALIDATE, { headers: forged });
    assert.equal(anonymous.status, 401);
    assert.deepEqual(anonymous.json, { detail: 'Not authenticated' });
    assert.equal(anonymous.headers['x-user-id'], undefined);
  },
);

test('no password oracle: Basic credentials, even right ones, are 401 without a password check', async (t) => {
  const gw = await startTestGateway(t);
  const basic = `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`;
  const res = await gw.request('GET', VALIDATE, { headers: { authorization: basic } });
  assert.equal(res.status, 401);
  assert.deepEqual(res.json, { detail: 'Not authenticated' });
  // A mesh envelope is not a credential here either.
  const mesh = await gw.request('GET', VALIDATE, {
    headers: { 'x-kz-mesh-signature': 'v1=abc', 'x-kz-mesh-source-cluster-id': 'x' },
  });
  assert.equal(mesh.status, 401);
});

test(
  'invalid credentials are throttled per client; trusted proxies name ' +
    'the client in X-Forwarded-For, others cannot',
  async (t) => {
    const gw = await startTestGateway(t, { auth: { forwardAuth: { failureBurst: 3, failureRefillSeconds: 600 } } });
    const admin = await gw.adminToken();
    const guess = (headers: Record<string, string> = {}) =>
      gw.request('GET', VALIDATE, { headers: { authorization: 'Bearer not-a-token', ...headers } });
    for (let i = 0; i < 3; i++) assert.equal((await guess({ 'x-forwarded-for': `198.51.100.${i}` })).status, 401);
    // An untrusted peer's X-Forwarded-For changes nothing: the socket address is the client, now locked.
    const locked = await guess({ 'x-forwarded-for': '203.0.113.9' });
    assert.equal(locked.status, 429);
    assert.equal(locked.json.detail.reason, 'validation_throttled');
    assert.ok(Number(locked.headers['retry-after']) > 0);
    assert.equal(
      (await gw.request('GET', VALIDATE, { token: admin })).status,
      429,
      'a locked client gets no answer at all',
    );
    assert.equal((await gw.request('GET', VALIDATE)).status, 401, 'no credential is not a guess and is answered');

    const behindProxy = await startTestGateway(t, {
      auth: { forwardAuth: { failureBurst: 2, failureRefillSeconds: 600, trustedProxies: ['127.0.0.0/8', '::1'] } },
    });
    const token = await behindProxy.adminToken();
    const from = (client: string, bearer = 'not-a-token') =>
      behindProxy.request('GET', VALIDATE, {
        headers: { authorization: `Bearer ${bearer}`, 'x-forwarded-for': `203.0.113.50, ${client}` },
      });
    assert.equal((await from('198.51.100.7')).status, 401);
    assert.equal((await from('198.51.100.7')).status, 401);
    assert.equal((await from('198.51.100.7')).status, 429, 'the client the proxy named is locked');
    assert.equal((await from('198.51.100.8', token)).status, 200, 'another client behind the same proxy is not');
    // The rightmost untrusted hop is the client: an entry the client wrote itself (on the left) cannot dodge the lock.
    assert.equal((await from('198.51.100.7')).status, 429);
  },
);

test("the SDK's alias /api/auth/forward/validate answers as /api/auth/validate, under the same throttle", async (t) => {
  const gw = await startTestGateway(t, { auth: { forwardAuth: { failureBurst: 2, failureRefillSeconds: 600 } } });
  const alice = await gw.userToken('alice');
  const ALIAS = '/api/auth/forward/validate';
  for (const path of [ALIAS, `${ALIAS}/app/orders?id=1`]) {
    const res = await gw.request('GET', path, { token: alice.token, headers: { 'x-user-id': 'admin' } });
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    assert.equal(res.headers['x-user-id'], alice.id);
    assert.equal(res.headers['x-auth-token'], undefined);
  }
  const anonymous = await gw.request('POST', ALIAS, { headers: { 'x-user-id': 'admin' } });
  assert.deepEqual([anonymous.status, anonymous.json], [401, { detail: 'Not authenticated' }]);
  assert.equal(anonymous.headers['x-user-id'], undefined);
  // Guesses on either path spend one budget: the alias is no way around the throttle.
  const guess = (path: string) => gw.request('GET', path, { headers: { authorization: 'Bearer not-a-token' } });
  assert.equal((await guess(ALIAS)).status, 401);
  assert.equal((await guess(VALIDATE)).status, 401);
  assert.equal((await guess(ALIAS)).status, 429);
  assert.equal((await guess(VALIDATE)).status, 429);
});

/** A request to nginx over plain HTTP on loopback (the gateway side of nginx is TLS). */
function viaNginx(
  url: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(`${url}${path}`, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

test(
  'nginx auth_request in front of an app: identity headers set by nginx ' +
    'from our answer, TLS verified against the gateway CA',
  async (t) => {
    const gw = await startTestGateway(t);
    const app = await startAppServer(t);
    const gateway = new URL(gw.url);
    // One upstream block per trust setting: nginx shares an implicit upstream (its TLS session and failure state)
    // between
    // locations naming the same address, which would let one location ride on the other's verified session.
    const authLocation = (name: string, upstream: string, caFile: string) => `
      location = ${name} {
        internal;
        proxy_pass https://${upstream}${VALIDATE};
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
        proxy_set_header X-Original-URI $request_uri;
        proxy_ssl_server_name on;
        proxy_ssl_name ${gateway.hostname};
        proxy_ssl_trusted_certificate ${caFile};
        proxy_ssl_verify on;
        proxy_ssl_verify_depth 2;
      }`;
    const protect = (auth: string) => `
        auth_request ${auth};
        auth_request_set $kz_user $upstream_http_x_user_name;
        auth_request_set $kz_id $upstream_http_x_user_id;
        auth_request_set $kz_roles $upstream_http_x_user_roles;
        proxy_set_header X-User-Name $kz_user;
        proxy_set_header X-User-Id $kz_id;
        proxy_set_header X-User-Roles $kz_roles;
        proxy_set_header Authorization "";
        proxy_pass ${app.url}/headers;`;
    const nginx = await startNginx(t, (dir, listen) => {
      writeFileSync(join(dir, 'gateway-ca.pem'), gw.gateway.caPem);
      return `
    upstream gateway { server 127.0.0.1:${gateway.port}; }
    upstream gateway_other_ca { server 127.0.0.1:${gateway.port}; }
    server {
      ${listen}
      ${authLocation('/_auth', 'gateway', join(dir, 'gateway-ca.pem'))}
      ${authLocation('/_auth_wrong_ca', 'gateway_other_ca', '/etc/ssl/certs/ca-certificates.crt')}
      location = /app { ${protect('/_auth')} }
      location = /wrong-ca { ${protect('/_auth_wrong_ca')} }
    }`;
    });
    const bob = await gw.userToken('bob');
    // First, before any TLS session to the gateway exists: the same setup trusting other CAs cannot reach us, nginx
    // refuses our certificate and the request fails closed.
    assert.equal((await viaNginx(nginx.url, '/wrong-ca', { authorization: `Bearer ${bob.token}` })).status, 500);
    assert.equal((await viaNginx(nginx.url, '/app')).status, 401, 'no token: nginx refuses, the app is never called');
    assert.equal((await viaNginx(nginx.url, '/app', { authorization: 'Bearer forged' })).status, 401);
    const ok = await viaNginx(nginx.url, '/app', {
      authorization: `Bearer ${bob.token}`,
      'x-user-name': 'admin',
      'x-user-roles': 'admin',
    });
    assert.equal(ok.status, 200, ok.body);
    const seen = JSON.parse(ok.body);
    assert.equal(seen['x-user-name'], 'bob', 'the header comes from our answer, not from the client');
    assert.equal(seen['x-user-id'], bob.id);
    assert.equal(
      seen['x-user-roles'],
      undefined,
      "bob has no roles: nginx sends no empty header, and the client's 'admin' is gone",
    );
    assert.equal(seen.authorization, undefined, 'the token stays at the edge');
    const admin = JSON.parse(
      (await viaNginx(nginx.url, '/app', { authorization: `Bearer ${await gw.adminToken()}` })).body,
    );
    assert.equal(admin['x-user-roles'], 'admin');
  },
);
