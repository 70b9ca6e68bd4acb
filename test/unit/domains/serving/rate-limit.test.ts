/**
 * Per-caller rate limits held in the shared database: two limiters on two connections to one database file stand
 * for two processes (workers, or nodes on one database). Together they admit what one bucket allows, within 10 %,
 * never more; callers and deployments have buckets of their own. Time is the limiters' clock, stepped by the test.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { RateLimiter } from '../../../../domains/serving/rate-limit.ts';
import { createDeploymentStore } from '../../../../domains/serving/store.ts';
import { openDatabase } from '../../../../gateway/db/open.ts';
import { deploymentRow } from '../../../helpers/deployments.ts';

function twoProcesses(t: { after(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-rate-'));
  const file = join(dir, 'meshgate.db');
  const [one, two] = [openDatabase(file), openDatabase(file)];
  t.after(() => {
    one.sqlite.close();
    two.sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const store = createDeploymentStore(one.db);
  for (const id of ['model', 'other']) store.insert(deploymentRow(id));
  let now = 1_000_000;
  const clock = () => now;
  return {
    limiters: [new RateLimiter(store, clock), new RateLimiter(createDeploymentStore(two.db), clock)] as const,
    advance: (ms: number) => {
      now += ms;
    },
    store,
  };
}

test('two processes together admit what one bucket allows, within 10 % and never more', (t) => {
  const { limiters, advance } = twoProcesses(t);
  const limit = { requests_per_second: 50, burst: 10 };
  let admitted = 0;
  // Ten seconds of a caller sending 200 requests a second, alternately through either process.
  for (let ms = 0; ms < 10_000; ms += 5) {
    if (limiters[(ms / 5) % 2]?.take('model', 'user:local:alice', limit) === null) admitted++;
    advance(5);
  }
  const allowed = limit.burst + limit.requests_per_second * 10;
  assert.ok(admitted <= allowed, `${admitted} admitted, at most ${allowed} allowed`);
  assert.ok(admitted >= allowed * 0.9, `${admitted} admitted, within 10 % of ${allowed}`);
});

test('a refusal is 429 rate_limited with Retry-After; other callers and deployments are not charged', (t) => {
  const { limiters, advance, store } = twoProcesses(t);
  const [one, two] = limiters;
  const limit = { requests_per_second: 0.5, burst: 3 };
  for (let i = 0; i < 3; i++) assert.equal(one.take('model', 'user:local:alice', limit), null, `burst ${i}`);
  const refusal = two.take('model', 'user:local:alice', limit);
  assert.equal(refusal?.status, 429);
  assert.equal(refusal?.reason, 'rate_limited');
  assert.equal(refusal?.extra.retry_after, 2, 'one token is two seconds away at half a request a second');
  assert.equal(two.take('model', 'user:local:bob', limit), null, 'another user has a bucket of their own');
  assert.equal(two.take('other', 'user:local:alice', limit), null, 'and so has another deployment');
  advance(2000);
  assert.equal(one.take('model', 'user:local:alice', limit), null, 'refilled');
  store.pruneBuckets(Number.MAX_SAFE_INTEGER);
  assert.equal(one.take('model', 'user:local:alice', limit), null, 'a pruned bucket is a full one');
});
