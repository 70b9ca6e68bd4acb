/**
 * The migration that makes a declared peer's live record unique, on a database where concurrent applies already made
 * several: the PAIRED one stays declared (else the first made), the others become records made by hand, nothing is
 * deleted; afterwards the database refuses a second live record for one peer, and allows disconnected ones beside it.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { drizzle, migrate } from '../../../../gateway/db/drizzle.ts';
import { shippedFiles } from '../../../../gateway/shipped.ts';

const TAG = /_federation_declared_dedupe$/;

/** A copy of the migrations folder that stops just before the dedupe migration. */
function foldersBefore(dir: string): string {
  const folder = join(dir, 'before');
  cpSync(shippedFiles().migrationsFolder, folder, { recursive: true });
  const journalFile = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((e) => TAG.test(e.tag));
  assert.ok(at > 0, 'the dedupe migration is in the journal');
  writeFileSync(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
  return folder;
}

test('live declared duplicates: one stays declared, the rest are kept by hand; then a duplicate is refused', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-migration-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const sqlite = new Database(join(dir, 'db.sqlite'));
  t.after(() => sqlite.close());
  const db = drizzle(sqlite);
  migrate(db, { migrationsFolder: foldersBefore(dir) });

  const add = sqlite.prepare(
    `INSERT INTO federations (id, role, remote_cluster_name, remote_ips, local_cluster_id, status, declared_as,
       created_at, updated_at, brokering_enabled, grandfathered)
     VALUES (?, 'receiver', 'peer', '[]', 'local', ?, ?, ?, ?, 1, 0)`,
  );
  const rows: [string, string, string | null, string][] = [
    ['b-waiting-first', 'WAITING', 'b', '2025-01-01'],
    ['b-paired-later', 'PAIRED', 'b', '2025-01-02'],
    ['b-waiting-last', 'WAITING', 'b', '2025-01-03'],
    ['b-disconnected', 'DISCONNECTED', 'b', '2024-12-01'],
    ['c-pairing-1', 'PAIRING', 'c', '2025-01-01'],
    ['c-pairing-2', 'PAIRING', 'c', '2025-01-01'],
    ['d-only', 'WAITING', 'd', '2025-01-01'],
    ['by-hand', 'PAIRED', null, '2025-01-01'],
  ];
  for (const [id, status, declared, at] of rows) add.run(id, status, declared, at, at);

  migrate(db, { migrationsFolder: shippedFiles().migrationsFolder });
  const after = sqlite.prepare('SELECT id, status, declared_as FROM federations ORDER BY id').all();
  assert.deepEqual(after, [
    { id: 'b-disconnected', status: 'DISCONNECTED', declared_as: 'b' },
    { id: 'b-paired-later', status: 'PAIRED', declared_as: 'b' },
    { id: 'b-waiting-first', status: 'WAITING', declared_as: null },
    { id: 'b-waiting-last', status: 'WAITING', declared_as: null },
    { id: 'by-hand', status: 'PAIRED', declared_as: null },
    { id: 'c-pairing-1', status: 'PAIRING', declared_as: 'c' },
    { id: 'c-pairing-2', status: 'PAIRING', declared_as: null },
    { id: 'd-only', status: 'WAITING', declared_as: 'd' },
  ]);

  assert.throws(() => add.run('b-again', 'WAITING', 'b', '2025-02-01', '2025-02-01'), /UNIQUE constraint failed/);
  add.run('b-ended', 'DISCONNECTED', 'b', '2025-02-01', '2025-02-01');
  add.run('b-gone', 'DELETED', 'b', '2025-02-01', '2025-02-01');
  sqlite.prepare("UPDATE federations SET status = 'DISCONNECTED' WHERE id = 'b-paired-later'").run();
  add.run('b-next', 'PAIRING', 'b', '2025-02-02', '2025-02-02');
});
