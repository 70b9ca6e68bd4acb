/**
 * Ended sessions stay ended: a rotation racing a reuse detection leaves no
 * live successor, an ended family is refused whatever its rows say (even
 * once its access-token deny-list entry has expired), refresh rows without a
 * family are refused, and a password reset (API or CLI) ends live access
 * tokens like a logout does. An ended family's record is dropped once it can
 * no longer matter: a refresh-token lifetime (and the nodes' clock skew)
 * after its end, with no unexpired token of it left.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NODE_CLOCK_SKEW_SECONDS } from '../../../../gateway/cluster/nodes.ts';
import { withTestDatabase } from '../../../helpers/engine.ts';
import { ADMIN_PASSWORD, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

const BIN = fileURLToPath(new URL('../../../../bin/meshgate', import.meta.url));
const ACCESS_TTL = 30;

const refresh = (gw: TestGateway, token: string) =>
  gw.request('POST', `/api/auth/refresh?refresh_token=${encodeURIComponent(token)}`);
const meStatus = async (gw: TestGateway, token: string) =>
  (await gw.request('GET', '/api/auth/users/me', { token })).status;

async function session(gw: TestGateway, username = 'admin', password = ADMIN_PASSWORD) {
  const res = await gw.request('POST', '/api/auth/token', { form: { username, password, grant_type: 'password' } });
  assert.equal(res.status, 200, res.text);
  return { access: res.json.access_token as string, refresh: res.json.refresh_token as string };
}

/** A gateway whose clock the test moves forward (the signer keeps real time, as token `exp` is checked by it). */
async function gatewayWithClock(t: Parameters<typeof startTestGateway>[0], auth: Record<string, number> = {}) {
  const clock = { offsetMs: 0 };
  const gw = await startTestGateway(
    t,
    { auth: { accessTokenTtlSeconds: ACCESS_TTL, ...auth } },
    { now: () => new Date(Date.now() + clock.offsetMs) },
  );
  return { gw, clock };
}

/** Writes a refresh row straight into the database: what a rotation racing a revocation used to leave behind. */
function plantRefresh(gw: TestGateway, userId: string, familyId: string | null): string {
  const token = randomBytes(32).toString('base64url');
  const at = new Date();
  gw.gateway.deps.sql
    .prepare(
      'INSERT INTO refresh_tokens (token_hash, user_id, expires_at, revoked, ' +
        'created_at, family_id) VALUES (?, ?, ?, 0, ?, ?)',
    )
    .run(
      createHash('sha256').update(token).digest('hex'),
      userId,
      new Date(at.getTime() + 3_600_000).toISOString(),
      at.toISOString(),
      familyId,
    );
  return token;
}

test(
  'concurrent refreshes of one token leave no live successor, now or ' + 'after the deny list forgets the session',
  async (t) => {
    const { gw, clock } = await gatewayWithClock(t);
    const { refresh: first } = await session(gw);
    const race = await Promise.all(Array.from({ length: 4 }, () => refresh(gw, first)));
    const won = race.filter((r) => r.status === 200);
    assert.ok(
      race.some((r) => r.status === 401),
      'the reuse was detected',
    );
    for (const r of won) {
      assert.equal(
        await meStatus(gw, r.json.access_token),
        401,
        "a racing winner's access token belongs to the ended session",
      );
      assert.equal(
        (await refresh(gw, r.json.refresh_token)).status,
        401,
        "a racing winner's refresh token died with its family",
      );
    }
    // Past the access-token lifetime the session's deny-list entry is dropped; the family stays ended.
    clock.offsetMs = (ACCESS_TTL + 5) * 1000;
    for (const r of won) assert.equal((await refresh(gw, r.json.refresh_token)).status, 401);
    assert.equal((await refresh(gw, first)).status, 401);
  },
);

test('an ended family is never honoured again, whatever its rows say; rows without a family are refused', async (t) => {
  const { gw, clock } = await gatewayWithClock(t);
  const me = await gw.request('GET', '/api/auth/users/me', { token: await gw.adminToken() });
  const { refresh: first } = await session(gw);
  const rotated = await refresh(gw, first);
  assert.equal(rotated.status, 200);
  const familyId = gw.gateway.deps.sql
    .prepare('SELECT family_id FROM refresh_tokens WHERE revoked = 1')
    .pluck()
    .get() as string;
  assert.equal((await refresh(gw, first)).status, 401, 'reuse ends the family');
  clock.offsetMs = (ACCESS_TTL + 5) * 1000;
  const planted = plantRefresh(gw, me.json.sub, familyId);
  assert.equal((await refresh(gw, planted)).status, 401, 'an unrevoked row of an ended family');
  const legacy = plantRefresh(gw, me.json.sub, null);
  assert.equal((await refresh(gw, legacy)).status, 401, 'a row from before sessions had families');
  const fresh = await session(gw);
  assert.equal((await refresh(gw, fresh.refresh)).status, 200, 'a new login is a new family');
});

test('a password reset through the subjects API ends live access tokens and refresh tokens; PATs stay', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  await gw.userToken('dana');
  const dana = await session(gw, 'dana', 'dana-password');
  const pat = (await gw.request('POST', '/api/auth/pats?ttl_seconds=3600', { token: dana.access })).json
    .token as string;
  assert.equal(await meStatus(gw, dana.access), 200, 'verified once, so it sits in the token cache');
  const reset = await gw.request('PUT', '/api/authz/subjects/dana', {
    token: admin,
    json: { password: 'a-new-password' },
  });
  assert.equal(reset.status, 200, reset.text);
  assert.equal(await meStatus(gw, dana.access), 401, 'the access token signed in with the old password');
  assert.equal((await refresh(gw, dana.refresh)).status, 401);
  assert.equal(await meStatus(gw, pat), 200, 'a PAT is not a session');
  assert.equal(await meStatus(gw, (await session(gw, 'dana', 'a-new-password')).access), 200);
});

test('meshgate user reset-password on the same database ends the running gateway’s access tokens', async (t) => {
  const gw = await startTestGateway(t);
  await gw.userToken('erin');
  const erin = await session(gw, 'erin', 'erin-password');
  assert.equal(await meStatus(gw, erin.access), 200);
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(
      BIN,
      withTestDatabase(['user', 'reset-password', 'erin', '--password-stdin', '--data-dir', gw.dataDir]),
      {
        stdio: ['pipe', 'ignore', 'inherit'],
      },
    );
    child.stdin.end('erin-new-password\n');
    child.on('close', resolve);
  });
  assert.equal(code, 0);
  assert.equal(await meStatus(gw, erin.access), 401);
  assert.equal((await refresh(gw, erin.refresh)).status, 401);
});

test('an ended family is forgotten once no token of it can be presented, and not before', async (t) => {
  const REFRESH_TTL = 60;
  const { gw, clock } = await gatewayWithClock(t, { refreshTokenTtlSeconds: REFRESH_TTL });
  const ended = () => gw.gateway.deps.sql.prepare('SELECT family_id FROM revoked_families').pluck().all() as string[];
  const sidOf = (access: string) => JSON.parse(Buffer.from(access.split('.')[1] as string, 'base64url').toString()).sid;
  const logout = async (access: string) =>
    assert.equal((await gw.request('POST', '/api/auth/logout', { token: access })).status, 200);
  const me = await gw.request('GET', '/api/auth/users/me', { token: await gw.adminToken() });

  // A logout ends every session of its user: each family ended below is among the records.
  const first = await session(gw);
  await logout(first.access);
  assert.ok(ended().includes(sidOf(first.access)));
  // A token of the ended family that has not expired yet (a rotation that raced the logout, say).
  const straggler = plantRefresh(gw, me.json.sub, sidOf(first.access));
  const forgotten = (REFRESH_TTL + NODE_CLOCK_SKEW_SECONDS + 10) * 1000;
  clock.offsetMs = forgotten - 20_000;
  const second = await session(gw);
  await logout(second.access);
  assert.ok(ended().includes(sidOf(first.access)), 'within a refresh-token lifetime and the clock skew: kept');

  clock.offsetMs = forgotten;
  const third = await session(gw);
  await logout(third.access);
  assert.ok(ended().includes(sidOf(first.access)), 'kept while a token of the family is unexpired');
  assert.equal((await refresh(gw, straggler)).status, 401, 'and that token is refused');

  clock.offsetMs = forgotten + 3_600_000;
  const fourth = await session(gw);
  await logout(fourth.access);
  assert.deepEqual(ended(), [sidOf(fourth.access)], 'every family ended a lifetime ago, its tokens expired, is gone');
  assert.equal((await refresh(gw, fourth.refresh)).status, 401, 'the one just ended is refused');
});
