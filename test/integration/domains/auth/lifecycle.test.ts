/**
 * Token lifecycle on a real gateway: refresh-token reuse ends the whole
 * session (RFC 9700 §4.14.2), logout ends access tokens too (and stays so
 * across a restart), and disabling a user, through the API or the CLI on the
 * same database, refuses every credential on the next request until enabled.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runMeshgate } from '../../../helpers/cli.ts';
import { ADMIN_PASSWORD, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

const ME = '/api/auth/users/me';

async function session(gw: TestGateway, username = 'admin', password = ADMIN_PASSWORD) {
  const res = await gw.request('POST', '/api/auth/token', { form: { username, password, grant_type: 'password' } });
  assert.equal(res.status, 200, res.text);
  return { access: res.json.access_token as string, refresh: res.json.refresh_token as string };
}

const refresh = (gw: TestGateway, token: string) =>
  gw.request('POST', `/api/auth/refresh?refresh_token=${encodeURIComponent(token)}`);
const meStatus = async (gw: TestGateway, token: string) => (await gw.request('GET', ME, { token })).status;

const cli = runMeshgate;

test('a reused refresh token revokes its whole family: the successor and its access token are refused', async (t) => {
  const gw = await startTestGateway(t);
  const first = await session(gw);
  const other = await session(gw);
  const rotated = await refresh(gw, first.refresh);
  assert.equal(rotated.status, 200);
  assert.equal(await meStatus(gw, rotated.json.access_token), 200);
  // The attacker (or the client, we cannot tell) replays the rotated token.
  const replay = await refresh(gw, first.refresh);
  assert.equal(replay.status, 401);
  assert.deepEqual(replay.json, { detail: 'Invalid refresh token' });
  assert.equal((await refresh(gw, rotated.json.refresh_token)).status, 401, 'the successor died with the family');
  assert.equal(await meStatus(gw, rotated.json.access_token), 401, "the family's access token is revoked");
  assert.equal(await meStatus(gw, first.access), 401);
  // Another login is another family: untouched.
  assert.equal(await meStatus(gw, other.access), 200);
  assert.equal((await refresh(gw, other.refresh)).status, 200);
});

test('logout ends the access token at once, and the revocation survives a restart; PATs stay', async (t) => {
  const gw = await startTestGateway(t);
  const { access, refresh: refreshToken } = await session(gw);
  const pat = await gw.request('POST', '/api/auth/pats?ttl_seconds=3600', { token: access });
  assert.equal(pat.status, 200);
  assert.equal(await meStatus(gw, access), 200, 'verified once, so it sits in the token cache');
  assert.equal((await gw.request('POST', '/api/auth/logout', { token: access, json: {} })).status, 200);
  assert.equal(await meStatus(gw, access), 401);
  assert.equal((await refresh(gw, refreshToken)).status, 401);
  assert.equal(await meStatus(gw, pat.json.token), 200, 'a PAT is not a session');
  await gw.restart();
  assert.equal(await meStatus(gw, access), 401, 'the revocation list is persisted');
  assert.equal(await meStatus(gw, (await session(gw)).access), 200, 'a new login works');
});

test(
  'disable (PUT /api/auth/users/{id}) refuses access token, PAT, refresh ' + 'and login at once; enable restores',
  async (t) => {
    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    const bob = await gw.userToken('bob');
    const bobSession = await session(gw, 'bob', 'bob-password');
    const pat = (await gw.request('POST', '/api/auth/pats?ttl_seconds=3600', { token: bob.token })).json
      .token as string;
    for (const token of [bob.token, pat]) assert.equal(await meStatus(gw, token), 200);

    assert.equal(
      (await gw.request('PUT', `/api/auth/users/${bob.id}`, { token: bob.token, json: { active: false } })).status,
      403,
      'admins only',
    );
    const self = await gw.request('PUT', `/api/auth/users/admin`, { token: admin, json: { active: false } });
    assert.equal(self.status, 409);
    assert.equal(self.json.detail.reason, 'user_is_caller');
    assert.equal(
      (
        await gw.request('PUT', `/api/auth/users/${bob.id}`, {
          token: admin,
          json: { active: false, roles: ['admin'] },
        })
      ).status,
      422,
    );
    assert.equal(
      (await gw.request('PUT', '/api/auth/users/nobody', { token: admin, json: { active: false } })).status,
      404,
    );

    const disabled = await gw.request('PUT', `/api/auth/users/${bob.id}`, { token: admin, json: { active: false } });
    assert.equal(disabled.status, 200, disabled.text);
    assert.equal(disabled.json.active, false);
    for (const token of [bob.token, pat, bobSession.access]) assert.equal(await meStatus(gw, token), 401);
    assert.equal((await refresh(gw, bobSession.refresh)).status, 401);
    const denied = await gw.request('POST', '/api/auth/token', { form: { username: 'bob', password: 'bob-password' } });
    const wrong = await gw.request('POST', '/api/auth/token', { form: { username: 'bob', password: 'not-bobs' } });
    assert.equal(denied.status, 401);
    assert.deepEqual(denied.json, wrong.json, 'a disabled account answers exactly like a wrong password');

    const enabled = await gw.request('PUT', `/api/auth/users/bob`, { token: admin, json: { active: true } });
    assert.equal(enabled.json.active, true);
    for (const token of [bob.token, pat, bobSession.access]) assert.equal(await meStatus(gw, token), 200);
    assert.equal((await refresh(gw, bobSession.refresh)).status, 200, 'the refused refresh was not consumed');
    assert.equal((await gw.request('GET', `/api/auth/users/${bob.id}`, { token: admin })).json.username, 'bob');
  },
);

test('meshgate user disable on the same database reaches a running gateway on the next request', async (t) => {
  const gw = await startTestGateway(t);
  const carol = await gw.userToken('carol');
  assert.equal(await meStatus(gw, carol.token), 200, 'cached as verified');
  const off = await cli(['user', 'disable', 'carol', '--data-dir', gw.dataDir]);
  assert.equal(off.code, 0, off.out);
  assert.equal(await meStatus(gw, carol.token), 401);
  assert.match((await cli(['user', 'list', '--data-dir', gw.dataDir])).out, /carol .*disabled/);
  assert.equal((await cli(['user', 'enable', 'carol', '--data-dir', gw.dataDir])).code, 0);
  assert.equal(await meStatus(gw, carol.token), 200);
  const unknown = await cli(['user', 'disable', 'nobody', '--data-dir', gw.dataDir]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.out, /user_not_found/);
});
