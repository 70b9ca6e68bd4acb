/**
 * The federation migrations run on a database that already holds what they change, on the engine of the run
 * (MESHGATE_TEST_DATABASE=postgres: PostgreSQL's migrations, data/migrations-pg). Where concurrent applies made several
 * live records of one declared peer, the PAIRED one stays declared (else the first made); the others that are not
 * PAIRED are ended (DISCONNECTED, declared_duplicate, still declared: two of them would share one PSK and answer every
 * pair call psk_ambiguous), a second PAIRED one becomes a record made by hand marked declared_duplicate; nothing is
 * deleted, and afterwards the database refuses a second live record for one peer. Key ids stored by an earlier form
 * (testable offline against PSK guesses) are all cleared.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import type { SqlConnection } from '../../../../gateway/db/connection.ts';
import { drizzle, migrate } from '../../../../gateway/db/drizzle.ts';
import { openPostgres } from '../../../../gateway/db/postgres/open.ts';
import { shippedFiles } from '../../../../gateway/shipped.ts';
import { freshPostgresDatabase, TEST_ENGINE } from '../../../helpers/engine.ts';

const FOLDER = TEST_ENGINE === 'postgres' ? shippedFiles().pgMigrationsFolder : shippedFiles().migrationsFolder;

/** A copy of the engine's migrations folder that stops just before the migration whose tag ends with `suffix`. */
function folderBefore(dir: string, suffix: string): string {
  const folder = join(dir, `before${suffix}`);
  cpSync(FOLDER, folder, { recursive: true });
  const journalFile = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((e) => e.tag.endsWith(suffix));
  assert.ok(at > 0, `${suffix} is in the journal`);
  writeFileSync(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
  return folder;
}

/** A database migrated up to just before `suffix`, and a function that runs the rest of the migrations on it. */
async function migratedBefore(
  t: { after(fn: () => void): void },
  suffix: string,
): Promise<{ sql: SqlConnection; migrateAll(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-migration-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  if (TEST_ENGINE === 'postgres') {
    const url = await freshPostgresDatabase();
    const sql = await openPostgres(url, folderBefore(dir, suffix));
    t.after(() => sql.close());
    return {
      sql,
      migrateAll: async () => (await openPostgres(url, FOLDER)).close(),
    };
  }
  const sqlite = new Database(join(dir, 'db.sqlite'));
  t.after(() => sqlite.close());
  const db = drizzle(sqlite);
  migrate(db, { migrationsFolder: folderBefore(dir, suffix) });
  return { sql: sqlite, migrateAll: async () => migrate(db, { migrationsFolder: FOLDER }) };
}

const INSERT = `INSERT INTO federations (id, role, remote_cluster_name, remote_ips, local_cluster_id, status,
    declared_as, created_at, updated_at, brokering_enabled, grandfathered)
  VALUES (?, 'receiver', 'peer', '[]', 'local', ?, ?, ?, ?, 1, 0)`;

test('declared duplicates: one stays declared, the rest end or leave the set; a duplicate is refused', async (t) => {
  const { sql, migrateAll } = await migratedBefore(t, '_federation_declared_dedupe');
  const add = sql.prepare(INSERT);
  const rows: [string, string, string | null, string][] = [
    ['b-waiting-first', 'WAITING', 'b', '2025-01-01'],
    ['b-paired-later', 'PAIRED', 'b', '2025-01-02'],
    ['b-paired-last', 'PAIRED', 'b', '2025-01-04'],
    ['b-waiting-last', 'WAITING', 'b', '2025-01-03'],
    ['b-disconnected', 'DISCONNECTED', 'b', '2024-12-01'],
    ['c-pairing-1', 'PAIRING', 'c', '2025-01-01'],
    ['c-pairing-2', 'PAIRING', 'c', '2025-01-01'],
    ['e-waiting-first', 'WAITING', 'e', '2025-01-01'],
    ['e-waiting-second', 'WAITING', 'e', '2025-01-02'],
    ['d-only', 'WAITING', 'd', '2025-01-01'],
    ['by-hand', 'PAIRED', null, '2025-01-01'],
    ['by-hand-too', 'WAITING', null, '2025-01-01'],
  ];
  for (const [id, status, declared, at] of rows) add.run(id, status, declared, at, at);

  await migrateAll();
  const after = sql.prepare('SELECT id, status, status_reason, declared_as FROM federations ORDER BY id').all();
  const ended = 'declared_duplicate';
  assert.deepEqual(after, [
    { id: 'b-disconnected', status: 'DISCONNECTED', status_reason: null, declared_as: 'b' },
    { id: 'b-paired-last', status: 'PAIRED', status_reason: ended, declared_as: null },
    { id: 'b-paired-later', status: 'PAIRED', status_reason: null, declared_as: 'b' },
    { id: 'b-waiting-first', status: 'DISCONNECTED', status_reason: ended, declared_as: 'b' },
    { id: 'b-waiting-last', status: 'DISCONNECTED', status_reason: ended, declared_as: 'b' },
    { id: 'by-hand', status: 'PAIRED', status_reason: null, declared_as: null },
    { id: 'by-hand-too', status: 'WAITING', status_reason: null, declared_as: null },
    { id: 'c-pairing-1', status: 'PAIRING', status_reason: null, declared_as: 'c' },
    { id: 'c-pairing-2', status: 'DISCONNECTED', status_reason: ended, declared_as: 'c' },
    { id: 'd-only', status: 'WAITING', status_reason: null, declared_as: 'd' },
    { id: 'e-waiting-first', status: 'WAITING', status_reason: null, declared_as: 'e' },
    { id: 'e-waiting-second', status: 'DISCONNECTED', status_reason: ended, declared_as: 'e' },
  ]);
  const waitingPerPeer = sql
    .prepare("SELECT declared_as, count(*) AS n FROM federations WHERE status = 'WAITING' GROUP BY declared_as")
    .all() as { declared_as: string | null; n: number | string }[];
  assert.ok(
    waitingPerPeer.every((r) => r.declared_as === null || Number(r.n) === 1),
    'no declared peer keeps two WAITING records (they would share one PSK)',
  );

  assert.throws(
    () => add.run('b-again', 'WAITING', 'b', '2025-02-01', '2025-02-01'),
    /UNIQUE constraint failed|23505|federations_declared_live/,
  );
  add.run('b-ended', 'DISCONNECTED', 'b', '2025-02-01', '2025-02-01');
  add.run('b-gone', 'DELETED', 'b', '2025-02-01', '2025-02-01');
  sql.prepare("UPDATE federations SET status = 'DISCONNECTED' WHERE id = 'b-paired-later'").run();
  add.run('b-next', 'PAIRING', 'b', '2025-02-02', '2025-02-02');
});

test('key ids stored in the form a PSK guess could be tested against are cleared', async (t) => {
  const { sql, migrateAll } = await migratedBefore(t, '_federation_psk_key_id_lookup');
  const add = sql.prepare(INSERT);
  const keyed = sql.prepare('UPDATE federations SET psk_key_id = ? WHERE id = ?');
  for (const [id, status] of [
    ['waiting', 'WAITING'],
    ['paired', 'PAIRED'],
    ['disconnected', 'DISCONNECTED'],
  ] as const) {
    add.run(id, status, null, '2025-01-01', '2025-01-01');
    keyed.run('0123456789abcdef0123456789abcdef', id);
  }
  await migrateAll();
  assert.deepEqual(sql.prepare('SELECT id, psk_key_id FROM federations ORDER BY id').all(), [
    { id: 'disconnected', psk_key_id: null },
    { id: 'paired', psk_key_id: null },
    { id: 'waiting', psk_key_id: null },
  ]);
});
