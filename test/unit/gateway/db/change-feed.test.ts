import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { type ChangeFeedSettings, SqliteChangeFeed } from '../../../../gateway/db/change-feed.ts';
import { openDatabase } from '../../../../gateway/db/open.ts';

const SETTINGS: ChangeFeedSettings = { pollIntervalMs: 20, retainRows: 10_000, retainSeconds: 300 };

/** Two connections to one database file: what two gateway processes (or a gateway and the CLI) hold. */
function twoProcesses(t: { after(fn: () => void): void }, settings = SETTINGS) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-feed-'));
  const open = () => {
    const { sqlite } = openDatabase(join(dir, 'feed.db'));
    return { sqlite, feed: new SqliteChangeFeed(sqlite, settings, pino({ level: 'silent' })) };
  };
  const a = open();
  const b = open();
  t.after(() => {
    a.sqlite.close();
    b.sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { a, b };
}

function collect(feed: SqliteChangeFeed, topic: string): string[] {
  const seen: string[] = [];
  feed.subscribe(topic, (key) => seen.push(key));
  return seen;
}

test('a change committed by one connection reaches the other and the writer itself, in seq order', (t) => {
  const { a, b } = twoProcesses(t);
  const inB = collect(b.feed, 'routing');
  const inA = collect(a.feed, 'routing');
  a.sqlite.transaction(() => {
    a.feed.publish('routing', 'one');
    a.feed.publish('routing', 'two');
  })();
  a.feed.publish('routing', 'three');
  b.feed.poll();
  a.feed.poll();
  assert.deepEqual(inB, ['one', 'two', 'three']);
  assert.deepEqual(inA, ['one', 'two', 'three'], 'the writer is told as well (total_changes moved)');
  b.feed.poll();
  assert.deepEqual(inB, ['one', 'two', 'three'], 'each change once');
});

test('a poll reads rows only when the database moved', (t) => {
  const { a, b } = twoProcesses(t);
  b.feed.poll();
  const before = { ...b.feed.stats };
  for (let i = 0; i < 10; i++) b.feed.poll();
  assert.equal(b.feed.stats.reads, before.reads, 'nothing committed: no read');
  assert.equal(b.feed.stats.idlePolls, before.idlePolls + 10);
  a.feed.publish('users', 'u1');
  b.feed.poll();
  assert.equal(b.feed.stats.reads, before.reads + 1);
});

test('a rolled-back write publishes nothing; table triggers publish writes made by any connection', (t) => {
  const { a, b } = twoProcesses(t);
  const users = collect(b.feed, 'users');
  const tuples = collect(b.feed, 'authz_tuples');
  assert.throws(() =>
    a.sqlite.transaction(() => {
      a.feed.publish('users', 'ghost');
      throw new Error('roll back');
    })(),
  );
  const at = new Date().toISOString();
  a.sqlite
    .prepare('INSERT INTO users (id, username, roles, attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)')
    .run('u-1', 'carol', '[]', '{}', at, at);
  a.sqlite.prepare('UPDATE users SET disabled = 1 WHERE id = ?').run('u-1');
  a.sqlite
    .prepare(
      'INSERT INTO authz_tuples (subject_ns, subject_id, relation, ' +
        'object_ns, object_id, tenant, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    )
    .run('user', 'u-1', 'viewer', 'dataset', 'd1', 't', at);
  a.sqlite.prepare('DELETE FROM authz_tuples').run();
  b.feed.poll();
  assert.deepEqual(users, ['u-1', 'u-1']);
  const key = JSON.stringify(['user', 'u-1', 'viewer', 'dataset', 'd1', 't']);
  assert.deepEqual(tuples, [key, key], 'insert and delete, keyed by the whole tuple');
});

test('a process behind the trim point reloads every topic instead of replaying what it can no longer name', (t) => {
  const { a, b } = twoProcesses(t, { pollIntervalMs: 20, retainRows: 100, retainSeconds: 0 });
  const seen = collect(b.feed, 'tuples');
  let reloads = 0;
  b.feed.onReset('tuples', () => reloads++);
  a.sqlite.transaction(() => {
    for (let i = 0; i < 300; i++) a.feed.publish('tuples', `k${i}`);
  })();
  a.feed.poll(); // the writer reads its own rows, then trims all but the newest 100
  assert.equal(a.sqlite.prepare('SELECT count(*) FROM changes').pluck().get(), 100);
  b.feed.poll();
  assert.equal(reloads, 1);
  assert.deepEqual(seen, [], 'no partial replay before the reload');
  a.feed.publish('tuples', 'after');
  b.feed.poll();
  assert.deepEqual(seen, ['after'], 'caught up: later changes arrive one by one again');
  assert.equal(b.feed.stats.resets, 1);
});

test('a failing subscriber neither stops the others nor the feed', (t) => {
  const { a, b } = twoProcesses(t);
  b.feed.subscribe('deployments', () => {
    throw new Error('broken cache');
  });
  const seen = collect(b.feed, 'deployments');
  a.feed.publish('deployments', 'd1');
  a.feed.publish('deployments', 'd2');
  b.feed.poll();
  assert.deepEqual(seen, ['d1', 'd2']);
});

test('start() tails on its interval; close() stops it', async (t) => {
  const { a, b } = twoProcesses(t, { pollIntervalMs: 5, retainRows: 10_000, retainSeconds: 300 });
  const { promise, resolve } = Promise.withResolvers<string>();
  b.feed.subscribe('routing', resolve);
  b.feed.start();
  t.after(() => b.feed.close());
  a.feed.publish('routing', '1');
  assert.equal(await promise, '1');
});
