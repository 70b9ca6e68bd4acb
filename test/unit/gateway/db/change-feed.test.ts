/**
 * The change feed's contract, run on both engines: SQLite (two connections to one file, as two gateway processes
 * or a gateway and the CLI hold) and PostgreSQL (two connections to one database, as two nodes hold, each with its
 * own listening connection). A test steps the feeds with poll(); on PostgreSQL it first waits for the notification
 * the writer's commit sends, which is what makes a poll read there.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import {
  type ChangeFeedSettings,
  type FeedStatements,
  SqliteChangeFeed,
  type TailingChangeFeed,
} from '../../../../gateway/db/change-feed.ts';
import type { DatabaseEngine, SqlConnection } from '../../../../gateway/db/connection.ts';
import { openConfiguredDatabase, openDatabase } from '../../../../gateway/db/open.ts';
import { type ListenFn, PgChangeFeed, pgListener } from '../../../../gateway/db/postgres/change-feed.ts';
import { freshPostgresDatabase } from '../../../helpers/engine.ts';
import { waitFor } from '../../../helpers/wait.ts';

const SETTINGS: ChangeFeedSettings = { pollIntervalMs: 20, retainRows: 10_000, retainSeconds: 300 };
const ENGINES: readonly DatabaseEngine[] = ['sqlite', 'postgres'];
const silent = pino({ level: 'silent' });

interface Process {
  sql: SqlConnection;
  feed: TailingChangeFeed;
  /** Resolves when a poll now would read what other connections committed (PostgreSQL: their notification came). */
  settled(): Promise<void>;
}

/** Two processes on one database of the engine. */
async function twoProcesses(
  t: { after(fn: () => unknown): void },
  engine: DatabaseEngine,
  settings = SETTINGS,
  now?: () => number,
) {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'meshgate-feed-'));
    const open = (): Process => {
      const { sqlite } = openDatabase(join(dir, 'feed.db'));
      t.after(() => sqlite.close());
      return { sql: sqlite, feed: new SqliteChangeFeed(sqlite, settings, silent, now), settled: async () => {} };
    };
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    return { a: open(), b: open() };
  }
  const url = await freshPostgresDatabase();
  const open = async (): Promise<Process> => {
    const { sql } = await openConfiguredDatabase({ dataDir: '', database: url });
    // Notifications are held until the test asks (settled), and there is no safety poll: every read is one the
    // test caused, and each is caused by a notification.
    let held = 0;
    let deliver = () => {};
    const listen: ListenFn = (onNotify, onLost) =>
      pgListener(url)(() => {
        held++;
        deliver = onNotify;
      }, onLost);
    const feed = new PgChangeFeed(sql, listen, settings, silent, 3_600_000);
    feed.start();
    await feed.ready;
    t.after(() => {
      feed.close();
      sql.close();
    });
    const settled = async () => {
      const newest = sql.prepare('SELECT coalesce(max(seq), 0) FROM changes').pluck().get() as number;
      await waitFor(
        () => {
          if (held > 0) {
            held = 0;
            deliver();
          }
          return feed.seenUpTo >= newest;
        },
        { what: 'the notified changes' },
      );
    };
    return { sql, feed, settled };
  };
  const a = await open();
  const b = await open();
  return { a, b };
}

/** `count` changes of topic 'bulk' (keys '1'…), in one statement. */
function insertBulk(sql: SqlConnection, count: number): void {
  sql
    .prepare(
      'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) ' +
        "INSERT INTO changes (topic, key, at) SELECT 'bulk', CAST(i AS TEXT), unixepoch() FROM n",
    )
    .run(count);
}

function collect(feed: TailingChangeFeed, topic: string): string[] {
  const seen: string[] = [];
  feed.subscribe(topic, (key) => seen.push(key));
  return seen;
}

for (const engine of ENGINES) {
  test(`${engine}: a change committed by one connection reaches the other and the writer, in seq order`, async (t) => {
    const { a, b } = await twoProcesses(t, engine);
    const inB = collect(b.feed, 'routing');
    const inA = collect(a.feed, 'routing');
    a.sql.transaction(() => {
      a.feed.publish('routing', 'one');
      a.feed.publish('routing', 'two');
    })();
    a.feed.publish('routing', 'three');
    await b.settled();
    await a.settled();
    b.feed.poll();
    a.feed.poll();
    assert.deepEqual(inB, ['one', 'two', 'three']);
    assert.deepEqual(inA, ['one', 'two', 'three'], 'the writer is told as well');
    b.feed.poll();
    assert.deepEqual(inB, ['one', 'two', 'three'], 'each change once');
  });

  test(`${engine}: a poll reads rows only when the database moved`, async (t) => {
    const { a, b } = await twoProcesses(t, engine);
    b.feed.poll();
    const before = { ...b.feed.stats };
    for (let i = 0; i < 10; i++) b.feed.poll();
    assert.equal(b.feed.stats.reads, before.reads, 'nothing committed: no read');
    assert.equal(b.feed.stats.idlePolls, before.idlePolls + 10);
    a.feed.publish('users', 'u1');
    await b.settled();
    b.feed.poll();
    assert.equal(b.feed.stats.reads, before.reads + 1);
  });

  test(`${engine}: a rolled-back write publishes nothing; triggers publish writes by any connection`, async (t) => {
    const { a, b } = await twoProcesses(t, engine);
    const users = collect(b.feed, 'users');
    const tuples = collect(b.feed, 'authz_tuples');
    assert.throws(() =>
      a.sql.transaction(() => {
        a.feed.publish('users', 'ghost');
        throw new Error('roll back');
      })(),
    );
    const at = new Date().toISOString();
    a.sql
      .prepare('INSERT INTO users (id, username, roles, attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run('u-1', 'carol', '[]', '{}', at, at);
    a.sql.prepare('UPDATE users SET disabled = 1 WHERE id = ?').run('u-1');
    a.sql
      .prepare(
        'INSERT INTO authz_tuples (subject_ns, subject_id, relation, ' +
          'object_ns, object_id, tenant, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run('user', 'u-1', 'viewer', 'dataset', 'd1', 't', at);
    a.sql.prepare('DELETE FROM authz_tuples').run();
    await b.settled();
    b.feed.poll();
    assert.deepEqual(users, ['u-1', 'u-1']);
    const key = JSON.stringify(['user', 'u-1', 'viewer', 'dataset', 'd1', 't']);
    assert.deepEqual(tuples, [key, key], 'insert and delete, keyed by the whole tuple');
  });

  test(`${engine}: a process behind the trim point reloads every topic instead of a partial replay`, async (t) => {
    const { a, b } = await twoProcesses(t, engine, { pollIntervalMs: 20, retainRows: 100, retainSeconds: 0 });
    const seen = collect(b.feed, 'tuples');
    let reloads = 0;
    b.feed.onReset('tuples', () => reloads++);
    a.sql.transaction(() => {
      for (let i = 0; i < 300; i++) a.feed.publish('tuples', `k${i}`);
    })();
    await a.settled();
    a.feed.poll(); // the writer reads its own rows, then trims all but the newest 100
    assert.equal(a.sql.prepare('SELECT count(*) FROM changes').pluck().get(), 100);
    await b.settled();
    b.feed.poll();
    assert.equal(reloads, 1);
    assert.deepEqual(seen, [], 'no partial replay before the reload');
    a.feed.publish('tuples', 'after');
    await b.settled();
    b.feed.poll();
    assert.deepEqual(seen, ['after'], 'caught up: later changes arrive one by one again');
    assert.equal(b.feed.stats.resets, 1);
  });

  test(`${engine}: a subscriber that failed is handed the change again by a later poll`, async (t) => {
    const { a, b } = await twoProcesses(t, engine);
    const seen: string[] = [];
    let down = true;
    // A cache whose re-read failed once (a dropped connection, a busy database): the row is already behind the feed.
    b.feed.subscribe('authz_tuples', (key) => {
      if (down) throw new Error('connection lost');
      seen.push(key);
    });
    a.feed.publish('authz_tuples', 'deleted-grant');
    await b.settled();
    b.feed.poll();
    assert.deepEqual(seen, []);
    down = false;
    // Within the retries' backoff (at most 10 s), though nothing committed since.
    await waitFor(() => (b.feed.poll(), seen.length > 0), { what: 'the change handed over again', timeoutMs: 15_000 });
    assert.deepEqual(seen, ['deleted-grant']);
  });

  test(`${engine}: a reload that failed after falling behind the trim point is run again`, async (t) => {
    const { a, b } = await twoProcesses(t, engine, { pollIntervalMs: 20, retainRows: 10, retainSeconds: 0 });
    let reloads = 0;
    let down = true;
    b.feed.onReset('tuples', () => {
      if (down) throw new Error('connection lost');
      reloads++;
    });
    a.sql.transaction(() => {
      for (let i = 0; i < 30; i++) a.feed.publish('tuples', `k${i}`);
    })();
    await a.settled();
    a.feed.poll();
    await b.settled();
    b.feed.poll();
    assert.equal(b.feed.stats.resets, 1);
    assert.equal(reloads, 0);
    down = false;
    await waitFor(() => (b.feed.poll(), reloads > 0), { what: 'the reload run again', timeoutMs: 15_000 });
    assert.equal(reloads, 1);
  });

  test(`${engine}: a failing subscriber neither stops the others nor the feed`, async (t) => {
    const { a, b } = await twoProcesses(t, engine);
    b.feed.subscribe('deployments', () => {
      throw new Error('broken cache');
    });
    const seen = collect(b.feed, 'deployments');
    a.feed.publish('deployments', 'd1');
    a.feed.publish('deployments', 'd2');
    await b.settled();
    b.feed.poll();
    assert.deepEqual(seen, ['d1', 'd2']);
  });
}

test('sqlite: a look a subscriber takes inside a poll delivers nothing twice', async (t) => {
  const { a, b } = await twoProcesses(t, 'sqlite');
  b.feed.poll();
  const bulk: string[] = [];
  // A subscriber that looks the feed up itself (as a user lookup would) after another commit, so a look of its own
  // would read: the rows the poll is walking would come again.
  b.feed.subscribe('bulk', (key) => {
    bulk.push(key);
    if (key === '10') {
      a.feed.publish('other', 'x');
      b.feed.catchUp();
    }
  });
  insertBulk(a.sql, 3000);
  b.feed.poll();
  assert.equal(bulk.length, 3000, 'each change once');
  assert.equal(new Set(bulk).size, 3000);
});

test('sqlite: the requests of one turn share a look; a commit reaches every look of a later turn', async (t) => {
  const { a, b } = await twoProcesses(t, 'sqlite', SETTINGS, () => 0);
  b.feed.poll();
  const users = collect(b.feed, 'users');
  b.feed.catchUp();
  const { idlePolls, reads } = b.feed.stats;
  a.feed.publish('users', 'disabled');
  b.feed.catchUp();
  assert.deepEqual(users, [], 'the turn that looked before the commit keeps its look');
  assert.deepEqual([b.feed.stats.idlePolls, b.feed.stats.reads], [idlePolls, reads], 'no second look in the turn');
  await new Promise((resolve) => setImmediate(resolve));
  b.feed.catchUp();
  assert.deepEqual(users, ['disabled'], 'the next turn looks again');
  b.feed.catchUp();
  await new Promise((resolve) => setImmediate(resolve));
  a.feed.publish('users', 'enabled');
  b.feed.catchUp();
  b.feed.catchUp();
  assert.deepEqual(users, ['disabled', 'enabled'], 'a turn that had not looked yet sees the commit');
});

test('sqlite: a poll looks whatever the turn found before, and so does the look after a read', async (t) => {
  const { a, b } = await twoProcesses(t, 'sqlite');
  b.feed.poll();
  const users = collect(b.feed, 'users');
  b.feed.catchUp();
  a.feed.publish('users', 'u1');
  b.feed.poll();
  assert.deepEqual(users, ['u1'], 'the interval poll (and a test) always looks');
  a.feed.publish('users', 'u2');
  b.feed.catchUp();
  assert.deepEqual(users, ['u1', 'u2'], 'a look that read leaves no quiet turn behind');
});

test('sqlite: what a poll left (over 20 batches) is read by the next look, though nothing committed', async (t) => {
  const { a, b } = await twoProcesses(t, 'sqlite');
  b.feed.poll();
  insertBulk(a.sql, 20_000);
  a.feed.publish('users', 'disabled');
  const users = collect(b.feed, 'users');
  b.feed.poll();
  assert.deepEqual(users, [], 'one poll delivers 20 batches; the disable is the 20 001st row');
  b.feed.catchUp();
  assert.deepEqual(users, ['disabled']);
});

test('sqlite: a poll that failed after seeing the database move has the next look read', async (t) => {
  const { a, b } = await twoProcesses(t, 'sqlite');
  b.feed.poll();
  const users = collect(b.feed, 'users');
  a.feed.publish('users', 'u1');
  failOnce(b.feed, 'after', 'all');
  assert.throws(() => b.feed.poll(), /SQLITE_BUSY/);
  b.feed.catchUp();
  assert.deepEqual(users, ['u1'], 'read again, though nothing committed since');
});

test('sqlite: a poll whose trim failed after delivering has the next look read nothing again', async (t) => {
  const { a, b } = await twoProcesses(t, 'sqlite', { pollIntervalMs: 20, retainRows: 0, retainSeconds: 300 });
  b.feed.poll();
  const users = collect(b.feed, 'users');
  a.feed.publish('users', 'u1');
  failOnce(b.feed, 'trim', 'run');
  assert.throws(() => b.feed.poll(), /SQLITE_BUSY/);
  assert.deepEqual(users, ['u1'], 'delivered before the trim');
  const { reads } = b.feed.stats;
  b.feed.catchUp();
  assert.equal(b.feed.stats.reads, reads, 'no read, and no trim waiting on the write lock again');
});

/** The feed's own statement `name` throws once from `method`, as a busy or full database would. */
function failOnce(feed: TailingChangeFeed, name: 'after' | 'trim', method: 'all' | 'run'): void {
  const statement = (feed as unknown as { statements: FeedStatements }).statements[name];
  const original = statement[method].bind(statement);
  let failures = 1;
  statement[method] = (...params: unknown[]) => {
    if (failures-- > 0) throw new Error('SQLITE_BUSY');
    return original(...params) as never;
  };
}

test('sqlite: start() tails on its interval; close() stops it', async (t) => {
  const { a, b } = await twoProcesses(t, 'sqlite', { pollIntervalMs: 5, retainRows: 10_000, retainSeconds: 300 });
  const { promise, resolve } = Promise.withResolvers<string>();
  b.feed.subscribe('routing', resolve);
  b.feed.start();
  t.after(() => b.feed.close());
  a.feed.publish('routing', '1');
  assert.equal(await promise, '1');
});

test('postgres: a listener whose connection is cut reconnects and reads what committed meanwhile', async (t) => {
  const { a, b } = await twoProcesses(t, 'postgres');
  const seen = collect(b.feed, 'routing');
  a.feed.publish('routing', 'before');
  await b.settled();
  // The server ends both listening connections; with the safety poll off, only a reconnect reads on.
  a.sql
    .prepare("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'meshgate-feed'")
    .all();
  a.feed.publish('routing', 'while-reconnecting');
  await b.settled();
  assert.deepEqual(seen, ['before', 'while-reconnecting']);
});

test('sqlite: a look is shared for a millisecond at most, however long the turn', async (t) => {
  let clock = 0;
  const { a, b } = await twoProcesses(t, 'sqlite', SETTINGS, () => clock);
  b.feed.poll();
  const users = collect(b.feed, 'users');
  b.feed.catchUp();
  a.feed.publish('users', 'disabled');
  clock += 1;
  b.feed.catchUp();
  assert.deepEqual(users, [], 'within the millisecond the look stands');
  clock += 0.5;
  b.feed.catchUp();
  assert.deepEqual(users, ['disabled'], 'past it, the same turn looks again');
});
