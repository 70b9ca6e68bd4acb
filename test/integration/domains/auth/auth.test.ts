import assert from 'node:assert/strict';
import { test } from 'node:test';
import { base64url, generateKeyPair, SignJWT } from 'jose';
import { ADMIN_PASSWORD, startTestGateway } from '../../../helpers/gateway.ts';

test('password grant issues a bearer token accepted by /users/me', async (t) => {
  const gw = await startTestGateway(t);
  const res = await gw.request('POST', '/api/auth/token', {
    form: { username: 'admin', password: ADMIN_PASSWORD, grant_type: 'password' },
  });
  assert.equal(res.status, 200);
  assert.equal(res.json.token_type, 'bearer');
  assert.equal(typeof res.json.expires_in, 'number');
  assert.equal(typeof res.json.refresh_token, 'string');
  const me = await gw.request('GET', '/api/auth/users/me', { token: res.json.access_token });
  assert.equal(me.status, 200);
  assert.equal(me.json.username, 'admin');
  assert.deepEqual(me.json.roles, ['admin']);
  assert.match(me.json.sub, /^[0-9a-f-]{36}$/);
});

test('bad credentials answer 401 with the contract string detail and leak nothing', async (t) => {
  const gw = await startTestGateway(t);
  for (const form of [
    { username: 'admin', password: 'wrong-password' },
    { username: 'nobody', password: 'x' },
  ]) {
    const res = await gw.request('POST', '/api/auth/token', { form: { ...form, grant_type: 'password' } });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { detail: 'Invalid credentials' });
  }
  const grant = await gw.request('POST', '/api/auth/token', { form: { grant_type: 'client_credentials' } });
  assert.equal(grant.status, 400);
  assert.equal(grant.json.detail.reason, 'unsupported_grant_type');
  const json = await gw.request('POST', '/api/auth/token', { json: { username: 'admin', password: ADMIN_PASSWORD } });
  assert.equal(json.status, 415);
  assert.ok(!gw.logs.join('').includes(ADMIN_PASSWORD), 'the password never reaches the log');
});

test('refresh tokens rotate: each works once, in the query or as a grant', async (t) => {
  const gw = await startTestGateway(t);
  const first = await gw.request('POST', '/api/auth/token', { form: { username: 'admin', password: ADMIN_PASSWORD } });
  const viaQuery = await gw.request(
    'POST',
    `/api/auth/refresh?refresh_token=${encodeURIComponent(first.json.refresh_token)}`,
  );
  assert.equal(viaQuery.status, 200);
  const viaGrant = await gw.request('POST', '/api/auth/token', {
    form: { grant_type: 'refresh_token', refresh_token: viaQuery.json.refresh_token },
  });
  assert.equal(viaGrant.status, 200);
  const logout = await gw.request('POST', '/api/auth/logout', { token: viaGrant.json.access_token, json: {} });
  assert.equal(logout.status, 200);
  assert.ok(logout.json.message && logout.json.logout_time);
  const afterLogout = await gw.request(
    'POST',
    `/api/auth/refresh?refresh_token=${encodeURIComponent(viaGrant.json.refresh_token)}`,
  );
  assert.equal(afterLogout.status, 401);
});

test('missing, malformed, forged, alg-none and expired tokens are all 401', async (t) => {
  const gw = await startTestGateway(t);
  const good = await gw.adminToken();
  const [header, payload] = good.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const none = `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${payload}.`;
  const { privateKey } = await generateKeyPair('RS256');
  const forged = await new SignJWT(claims)
    .setProtectedHeader(JSON.parse(Buffer.from(header, 'base64url').toString()))
    .sign(privateKey);
  // The right kid with another algorithm and the attacker's own key: the kid's key is only ever used with its own alg.
  const { kid } = JSON.parse(Buffer.from(header, 'base64url').toString());
  const swapped = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid })
    .sign((await generateKeyPair('ES256')).privateKey);
  const hs = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .sign(new TextEncoder().encode('secret-secret-secret-secret-32by'));
  const tamperedPayload = base64url.encode(JSON.stringify({ ...claims, roles: ['admin', 'root'] }));
  const tampered = `${header}.${tamperedPayload}.${good.split('.')[2]}`;
  for (const token of [undefined, 'garbage', none, forged, swapped, hs, tampered]) {
    const res = await gw.request('GET', '/api/auth/users/me', token ? { token } : {});
    assert.equal(res.status, 401, `token ${String(token).slice(0, 20)}`);
    assert.deepEqual(res.json, { detail: 'Not authenticated' });
    assert.equal(res.headers['www-authenticate'], 'Bearer');
  }
});

test('expired access tokens are refused', async (t) => {
  const gw = await startTestGateway(t, { auth: { accessTokenTtlSeconds: 30 } });
  const token = await gw.adminToken();
  assert.equal((await gw.request('GET', '/api/auth/users/me', { token })).status, 200);
  // Re-sign the same claims with the gateway's key but an exp in the past.
  const { loadSigningKeyRing } = await import('../../../../domains/auth/keys.ts');
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const key = (await loadSigningKeyRing(gw.dataDir, 'RS256', () => 0, nowSeconds)).active;
  const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());
  const expired = await new SignJWT({ ...claims, exp: Math.floor(Date.now() / 1000) - 5 })
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .sign(key.privateKey);
  assert.equal((await gw.request('GET', '/api/auth/users/me', { token: expired })).status, 401);
});

test('PAT lifecycle: create via query, use, list without secrets, revoke', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const created = await gw.request('POST', '/api/auth/pats?name=ci&ttl_seconds=3600&scope=admin', { token: admin });
  assert.equal(created.status, 200);
  const { token: pat, pat: meta } = created.json;
  assert.equal(meta.name, 'ci');
  assert.equal(meta.scope, 'admin');
  assert.equal(meta.revoked, false);
  const me = await gw.request('GET', '/api/auth/users/me', { token: pat });
  assert.equal(me.status, 200);
  assert.deepEqual(me.json.roles, ['admin']);
  const list = await gw.request('GET', '/api/auth/pats', { token: admin });
  assert.equal(list.json.pats.length, 1);
  assert.ok(!list.text.includes(pat), 'a PAT is shown once, never listed');
  const writeScoped = await gw.request('POST', '/api/auth/pats', { token: admin, json: { name: 'w', scope: 'write' } });
  assert.deepEqual((await gw.request('GET', '/api/auth/users/me', { token: writeScoped.json.token })).json.roles, []);
  const revoke = await gw.request('DELETE', `/api/auth/pats/${meta.jti}`, { token: admin });
  assert.deepEqual(revoke.json, { revoked: true, jti: meta.jti });
  assert.equal((await gw.request('GET', '/api/auth/users/me', { token: pat })).status, 401);
  assert.equal((await gw.request('DELETE', `/api/auth/pats/${meta.jti}x`, { token: admin })).status, 404);
});

test('PAT limits: ttl range, unknown scope, non-admin cannot mint an admin PAT', async (t) => {
  const gw = await startTestGateway(t);
  const { token } = await gw.userToken('alice');
  assert.equal(
    (await gw.request('POST', '/api/auth/pats?ttl_seconds=5', { token })).json.detail.reason,
    'pat_ttl_out_of_range',
  );
  assert.equal(
    (await gw.request('POST', '/api/auth/pats?scope=root', { token })).json.detail.reason,
    'pat_scope_invalid',
  );
  assert.equal((await gw.request('POST', '/api/auth/pats?scope=admin', { token })).status, 422);
  const config = await gw.request('GET', '/api/auth/pat-config', { token });
  assert.deepEqual(config.json.available_scopes, ['openid', 'write', 'admin']);
});

test('JWKS and OIDC discovery let a peer validate our tokens', async (t) => {
  const gw = await startTestGateway(t);
  const discovery = await gw.request('GET', '/api/auth/.well-known/openid-configuration');
  // Port 0 gives no stable URL: the issuer is the cluster identity, the endpoints the live origin.
  assert.match(discovery.json.issuer, /^urn:meshgate:cluster:[0-9a-f-]{36}$/);
  assert.equal(discovery.json.jwks_uri, `${gw.url}/api/auth/jwks`);
  const jwks = await gw.request('GET', '/api/auth/jwks');
  assert.equal(jwks.json.keys.length, 1);
  assert.equal(jwks.json.keys[0].alg, 'RS256');
  assert.equal(jwks.json.keys[0].kty, 'RSA');
  assert.equal(jwks.json.keys[0].d, undefined, 'no private part');
  const { createLocalJWKSet, jwtVerify } = await import('jose');
  const { payload } = await jwtVerify(await gw.adminToken(), createLocalJWKSet(jwks.json), {
    issuer: discovery.json.issuer,
  });
  assert.equal(payload.preferred_username, 'admin');
});

test('the bootstrap admin password is announced once when generated, never logged', async (t) => {
  const gw = await startTestGateway(t, { bootstrapAdminPassword: null });
  const line = gw.announced.find((l) => l.startsWith('meshgate bootstrap admin'));
  assert.ok(line);
  const password = /password=(\S+)/.exec(line)?.[1] as string;
  assert.equal((await gw.login('admin', password)).split('.').length, 3);
  assert.ok(!gw.logs.join('').includes(password));
  await gw.restart();
  assert.equal(
    gw.announced.filter((l) => l.startsWith('meshgate bootstrap admin')).length,
    1,
    'not re-announced on restart',
  );
});
