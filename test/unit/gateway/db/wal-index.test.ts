/**
 * The WAL-index watch in front of the change feed's counters: it must never answer "unchanged" across a commit by
 * any connection, and must step aside (null) where there is no wal-index file to read.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openDatabase } from '../../../../gateway/db/open.ts';
import { WalIndexWatch } from '../../../../gateway/db/wal-index.ts';

function twoConnections(t: { after(fn: () => unknown): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-wal-index-'));
  const file = join(dir, 'index.db');
  const reader = openDatabase(file).sqlite;
  const writer = openDatabase(file).sqlite;
  t.after(() => {
    reader.close();
    writer.close();
    rmSync(dir, { recursive: true, force: true });
  });
  writer.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
  return { file, reader, writer };
}

test('a commit by any connection changes the header; nothing else does', (t) => {
  const { file, reader, writer } = twoConnections(t);
  const watch = WalIndexWatch.open(file);
  assert.ok(watch, 'an open WAL database has a wal-index to read');
  t.after(() => watch.close());
  assert.equal(watch.unchanged(), false, 'the first look has nothing to compare with');
  assert.equal(watch.unchanged(), true);
  reader.prepare('SELECT count(*) FROM notes').get();
  assert.equal(watch.unchanged(), true, 'a read commits nothing');
  for (const connection of [writer, reader]) {
    connection.prepare('INSERT INTO notes (body) VALUES (?)').run('x');
    assert.equal(watch.unchanged(), false, 'a commit is seen at the next look');
    assert.equal(watch.unchanged(), true);
  }
  writer.pragma('wal_checkpoint(TRUNCATE)');
  watch.unchanged();
  writer.prepare('INSERT INTO notes (body) VALUES (?)').run('after the WAL restarts');
  assert.equal(watch.unchanged(), false, 'a commit into a restarted WAL is seen too');
  const rolledBack = writer.transaction(() => {
    writer.prepare('INSERT INTO notes (body) VALUES (?)').run('never committed');
    throw new Error('roll back');
  });
  assert.throws(rolledBack, /roll back/);
  assert.equal(watch.unchanged(), true, 'a rolled-back write commits nothing');
  watch.forget();
  assert.equal(watch.unchanged(), false, 'forget() sends the next look to the database');
});

test('no watch where there is no wal-index file: in memory, or not in WAL mode', (t) => {
  assert.equal(WalIndexWatch.open(':memory:'), null);
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-wal-index-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.equal(WalIndexWatch.open(join(dir, 'absent.db')), null);
});
