/**
 * Two gateways on one data dir, each with its own database connection (as two
 * processes have), plus the `meshgate` CLI as a third: a write through any of
 * them takes effect in the other within the change feed's bound. On SQLite the
 * bound is counted in polls; on PostgreSQL a change must arrive by its
 * notification, before any safety poll.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SqliteChangeFeed } from '../../../../gateway/db/change-feed.ts';
import { PgChangeFeed } from '../../../../gateway/db/postgres/change-feed.ts';
import { runMeshgate } from '../../../helpers/cli.ts';
import { TEST_ENGINE } from '../../../helpers/engine.ts';
import { startTestGateway, TestGateway } from '../../../helpers/gateway.ts';

/** The documented staleness bound (docs/operating.md) and the default poll interval. */
const BOUND_MS = 100;
const POLL_MS = 20;
/** Request round trips on a shared 2-core box: the deadline only stops a hung test, the poll count is the assertion. */
const DEADLINE_MS = BOUND_MS + 2000;

async function twoGateways(t: Parameters<typeof startTestGateway>[0]) {
  const a = await startTestGateway(t);
  const b = await new TestGateway(a.dataDir, a.overrides).start();
  t.after(() => b.stop());
  return { a, b };
}

const pollsOf = (gw: TestGateway) => {
  const { feed } = gw.gateway.deps;
  if (feed instanceof PgChangeFeed) return feed.safetyPolls;
  const { stats } = feed as SqliteChangeFeed;
  return stats.idlePolls + stats.reads;
};

/**
 * Waits until `holds()` is true in `gw`; returns how many feed polls `gw` made meanwhile. Within the bound means at
 * most BOUND_MS / POLL_MS polls (doubled: a timer tick may be late on a busy box, and the check itself takes a tick).
 */
async function pollsUntil(gw: TestGateway, holds: () => Promise<boolean>): Promise<number> {
  const start = pollsOf(gw);
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await holds())) {
    assert.ok(Date.now() < deadline, 'the change never reached the other gateway');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return pollsOf(gw) - start;
}

const WITHIN_BOUND = TEST_ENGINE === 'postgres' ? 0 : (BOUND_MS / POLL_MS) * 2;

const cli = runMeshgate;

const me = async (gw: TestGateway, token: string) => (await gw.request('GET', '/api/auth/users/me', { token })).status;

test('a logout answered by one gateway ends the session in the other', async (t) => {
  const { a, b } = await twoGateways(t);
  const carol = await a.userToken('carol');
  assert.equal(await me(b, carol.token), 200, 'verified and cached by the other gateway');
  assert.equal((await a.request('POST', '/api/auth/logout', { token: carol.token, json: {} })).status, 200);
  const polls = await pollsUntil(b, async () => (await me(b, carol.token)) === 401);
  assert.ok(polls <= WITHIN_BOUND, `${polls} polls`);
});

test('a PAT revoked through one gateway is refused by the other on the next request', async (t) => {
  const { a, b } = await twoGateways(t);
  const erin = await a.userToken('erin');
  const created = await a.request('POST', '/api/auth/pats', { token: erin.token, json: { name: 'feed' } });
  assert.equal(created.status, 200, created.text);
  const pat = created.json.token as string;
  assert.equal(await me(b, pat), 200, 'verified and cached by the other gateway');
  const revoke = await a.request('DELETE', `/api/auth/pats/${created.json.pat.jti}`, { token: erin.token });
  assert.equal(revoke.status, 200, revoke.text);
  // On PostgreSQL a look reads once the commit's notification arrived (docs/operating.md), so that engine may wait.
  if (TEST_ENGINE === 'sqlite') assert.equal(await me(b, pat), 401, 'the next request: the feed is caught up first');
  else await pollsUntil(b, async () => (await me(b, pat)) === 401);
});

test('a user disabled by the CLI is refused by both running gateways; enabling restores', async (t) => {
  const { a, b } = await twoGateways(t);
  const dave = await a.userToken('dave');
  for (const gw of [a, b]) assert.equal(await me(gw, dave.token), 200);
  assert.equal((await cli(['user', 'disable', 'dave', '--data-dir', a.dataDir])).code, 0);
  for (const gw of [a, b])
    assert.equal(await me(gw, dave.token), 401, 'the very next request: the feed is caught up first');
  assert.equal((await cli(['user', 'enable', 'dave', '--data-dir', a.dataDir])).code, 0);
  for (const gw of [a, b]) assert.equal(await me(gw, dave.token), 200);
});

test('a tuple deleted through one gateway stops granting in the other; a written one grants', async (t) => {
  const { a, b } = await twoGateways(t);
  const admin = await a.adminToken();
  const erin = await a.userToken('erin');
  const tuple = {
    subject: { namespace: 'user', id: erin.id },
    relation: 'viewer',
    object: { namespace: 'dataset', id: 'urn:feed' },
  };
  const allowed = async (gw: TestGateway) =>
    (await gw.request('POST', '/api/auth/check', { token: erin.token, json: tuple })).json.allow;
  assert.equal((await a.request('POST', '/api/auth/tuples', { token: admin, json: tuple })).status, 204);
  const granted = await pollsUntil(b, async () => (await allowed(b)) === true);
  assert.equal((await a.request('DELETE', '/api/auth/tuples', { token: admin, json: tuple })).status, 204);
  const revoked = await pollsUntil(b, async () => (await allowed(b)) === false);
  assert.ok(granted <= WITHIN_BOUND && revoked <= WITHIN_BOUND, `${granted} and ${revoked} polls`);
});

test('a routing PATCH answered by one gateway swaps the live table of the other', async (t) => {
  const { a, b } = await twoGateways(t);
  const admin = await a.adminToken();
  const probe = async (gw: TestGateway) => (await gw.request('GET', '/rt-feed/models/x')).status;
  const before = await probe(b);
  const patch = await a.request('PATCH', '/api/config/routing', {
    token: admin,
    json: { service_prefixes: { models: '/rt-feed/models' } },
  });
  assert.equal(patch.status, 200, patch.text);
  const now = await probe(a);
  assert.notEqual(now, before, 'the writer routes the new prefix at once');
  const polls = await pollsUntil(b, async () => (await probe(b)) === now);
  assert.ok(polls <= WITHIN_BOUND, `${polls} polls`);
});
