/**
 * The PostgreSQL engine's statement API (gateway/db/postgres/sync-connection.ts) behaves as better-sqlite3's does for
 * what the stores use, against a real PostgreSQL; and the PostgreSQL schema mirrors every table of the SQLite one.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import * as pgSchema from '../../../../data/schema.pg.ts';
import * as schema from '../../../../data/schema.ts';
import { openConfiguredDatabase } from '../../../../gateway/db/open.ts';
import { pgBridgeSource } from '../../../../gateway/db/postgres/bridge-source.ts';
import { PgQueryError, PgSyncConnection, toPositional } from '../../../../gateway/db/postgres/sync-connection.ts';
import { openTestDatabase } from '../../../helpers/engine.ts';

test('placeholders become $n outside strings, identifiers and comments', () => {
  assert.equal(
    toPositional(`SELECT '?', "a?b", x FROM t -- why?\nWHERE a = ? AND b = 'it''s ?' AND c = ?`),
    `SELECT '?', "a?b", x FROM t -- why?\nWHERE a = $1 AND b = 'it''s ?' AND c = $2`,
  );
});

test('statements, raw and pluck rows, upserts, bytea, booleans and errors as the stores expect them', async (t) => {
  const { sql, db } = await openTestDatabase(t, 'postgres');
  const at = new Date().toISOString();
  const insert = sql.prepare(
    'INSERT INTO users (id, username, roles, attributes, disabled, created_at, updated_at) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  assert.equal(insert.run('u1', 'ann', '[]', '{}', false, at, at).changes, 1);
  assert.deepEqual(sql.prepare('SELECT username, disabled FROM users WHERE id = ?').get('u1'), {
    username: 'ann',
    disabled: 0,
  });
  assert.deepEqual(sql.prepare('SELECT id, username FROM users').raw().all(), [['u1', 'ann']]);
  assert.equal(sql.prepare('SELECT count(*) FROM users').pluck().get(), 1, 'counts are numbers, as on SQLite');
  assert.deepEqual([...sql.prepare('SELECT id FROM users').pluck().iterate()], ['u1']);
  const bytes = Buffer.from([0, 1, 2, 255]);
  const echoed = sql.prepare('SELECT ?::bytea AS b').get(bytes) as { b: Buffer };
  assert.ok(Buffer.isBuffer(echoed.b) && echoed.b.equals(bytes), 'bytea comes back as a Buffer');
  // drizzle's SQLite dialect writes a table-qualified conflict target, which the connection makes PostgreSQL's.
  const { users } = schema;
  const row = { id: 'u1', username: 'ann2', roles: [], attributes: {}, createdAt: at, updatedAt: at };
  db.insert(users)
    .values(row)
    .onConflictDoUpdate({ target: users.id, set: { username: 'ann2' } })
    .run();
  assert.equal(sql.prepare('SELECT username FROM users').pluck().get(), 'ann2');
  assert.throws(
    () => insert.run('u2', 'ann2', '[]', '{}', false, at, at),
    (error: PgQueryError) => error instanceof PgQueryError && error.code === '23505',
    'a unique violation carries its SQLSTATE',
  );
});

test('transactions commit, roll back on a throw, and nest as savepoints', async (t) => {
  const { sql } = await openTestDatabase(t, 'postgres');
  const put = sql.prepare('INSERT INTO changes (topic, key, at) VALUES (?, ?, 0)');
  const keys = () => sql.prepare('SELECT key FROM changes ORDER BY seq').pluck().all();
  sql.transaction(() => {
    put.run('t', 'outer');
    assert.equal(sql.inTransaction, true);
    assert.throws(
      sql.transaction(() => {
        put.run('t', 'inner');
        throw new Error('inner fails');
      }),
      /inner fails/,
    );
  })();
  assert.equal(sql.inTransaction, false);
  assert.deepEqual(keys(), ['outer'], 'the inner savepoint rolled back alone');
  assert.throws(
    sql.transaction(() => {
      put.run('t', 'gone');
      throw new Error('outer fails');
    }),
    /outer fails/,
  );
  assert.deepEqual(keys(), ['outer']);
});

test('iterate() reads a large result in cursor batches, alone or inside a transaction', async (t) => {
  const { sql } = await openTestDatabase(t, 'postgres');
  sql.exec("INSERT INTO changes (topic, key, at) SELECT 't', g::text, 0 FROM generate_series(1, 12001) AS g");
  const keys = sql.prepare('SELECT key FROM changes ORDER BY seq').pluck();
  let count = 0;
  let ordered = true;
  for (const key of keys.iterate()) ordered &&= key === String(++count);
  assert.equal(count, 12001, 'every row, across three batches');
  assert.ok(ordered, 'in order');
  assert.equal(sql.inTransaction, false, 'its own transaction ended');
  const inside = sql.transaction(() => [...sql.prepare('SELECT count(*) FROM changes').pluck().iterate()])();
  assert.deepEqual(inside, [12001]);
  assert.throws(() => [...sql.prepare('SELECT 1 / (seq - seq) FROM changes').iterate()], PgQueryError);
  assert.equal(sql.prepare('SELECT 1').pluck().get(), 1, 'a failed iterate leaves the connection usable');
});

test('a statement past its bound fails with 57014 and the next one runs on a fresh connection', async (t) => {
  const { url } = await openTestDatabase(t, 'postgres');
  const sql = new PgSyncConnection(await pgBridgeSource(), url as string, undefined, 300);
  t.after(() => sql.close());
  assert.throws(
    () => sql.prepare('SELECT pg_sleep(5)').get(),
    (error: PgQueryError) => error.code === '57014',
  );
  assert.equal(sql.prepare('SELECT 2').pluck().get(), 2, 'the node is not left waiting behind the slow statement');
});

test('every table of the SQLite schema has its PostgreSQL mirror', () => {
  const { SQLiteTable } = createRequire(import.meta.url)('drizzle-orm/sqlite-core');
  const tables = Object.entries(schema).filter(([, value]) => value instanceof SQLiteTable);
  assert.deepEqual(Object.keys(pgSchema).sort(), tables.map(([name]) => name).sort());
});

test('a connection the server ended is replaced on the next call: the node recovers with PostgreSQL', async (t) => {
  const { sql, url } = await openTestDatabase(t, 'postgres');
  const [other] = await openTwoOn(t, url as string);
  other
    .prepare(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'meshgate' " +
        'AND pid <> pg_backend_pid() AND datname = current_database()',
    )
    .all();
  const attempts: string[] = [];
  for (let i = 0; i < 3; i++) {
    try {
      attempts.push(String(sql.prepare('SELECT 1 AS one').pluck().get()));
      break;
    } catch (error) {
      attempts.push((error as Error).message);
    }
  }
  assert.equal(attempts.at(-1), '1', `recovered: ${attempts.join(' | ')}`);
  assert.ok(attempts.length <= 2, 'at most the call racing the disconnect fails');
});

test('a connection lost inside a transaction fails the rest of it: no statement commits on a new one', async (t) => {
  const { sql, url } = await openTestDatabase(t, 'postgres');
  const [other] = await openTwoOn(t, url as string);
  const put = sql.prepare('INSERT INTO changes (topic, key, at) VALUES (?, ?, 0)');
  const alive = other.prepare('SELECT count(*) FROM pg_stat_activity WHERE pid = ?').pluck();
  assert.throws(
    sql.transaction(() => {
      put.run('t', 'before');
      const pid = sql.prepare('SELECT pg_backend_pid()').pluck().get();
      other.prepare('SELECT pg_terminate_backend(?)').get(pid);
      while (alive.get(pid) !== 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      // The worker hears the closed socket on its own thread while this one waits (a bounded, short pause).
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30);
      put.run('t', 'after');
    }),
    (error: PgQueryError) => error instanceof PgQueryError,
  );
  assert.equal(sql.inTransaction, false);
  assert.deepEqual(sql.prepare('SELECT key FROM changes').pluck().all(), [], 'nothing of the transaction committed');
});

async function openTwoOn(t: Parameters<typeof openTestDatabase>[0], url: string) {
  const { sql } = await openConfiguredDatabase({ dataDir: '', database: url });
  t.after(() => sql.close());
  return [sql] as const;
}
