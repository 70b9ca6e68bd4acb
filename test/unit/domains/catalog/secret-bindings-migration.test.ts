/**
 * The secret-id migration on a database written before it: every secret gets
 * its own random UUID; each dataset reference (at any depth of `properties`)
 * to a secret that exists is bound to that secret's id; a reference to an
 * absent secret gets no binding (its use answers secret_unavailable).
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { drizzle, migrate } from '../../../../gateway/db/drizzle.ts';
import { shippedFiles } from '../../../../gateway/shipped.ts';

const TAG = /_secret_ids_and_dataset_bindings$/;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A copy of the migrations folder that stops just before the secret-id migration. */
function foldersBefore(dir: string): string {
  const folder = join(dir, 'before');
  cpSync(shippedFiles().migrationsFolder, folder, { recursive: true });
  const journalFile = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((e) => TAG.test(e.tag));
  assert.ok(at > 0, 'the secret-id migration is in the journal');
  writeFileSync(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
  return folder;
}

test('existing secrets get distinct UUIDs; existing references bind where their secret exists', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-migration-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const sqlite = new Database(join(dir, 'db.sqlite'));
  t.after(() => sqlite.close());
  sqlite.pragma('foreign_keys = ON');
  const db = drizzle(sqlite);
  migrate(db, { migrationsFolder: foldersBefore(dir) });

  const at = '2025-01-01T00:00:00.000Z';
  const addSecret = sqlite.prepare(
    `INSERT INTO catalog_secrets
       (urn, name, owner, owner_id, ciphertext, wrapped_key, kek_version, created_at, updated_at)
     VALUES (?, ?, 'urn:li:corpuser:bob', 'bob-id', x'00', x'00', 1, ?, ?)`,
  );
  for (const name of ['pg', 'kafka', 'odd #name']) addSecret.run(`urn:li:dataHubSecret:${name}`, name, at, at);
  const addDataset = sqlite.prepare(
    `INSERT INTO catalog_datasets
       (urn, name, platform, environment, tags, properties, created_by, created_at, updated_at)
     VALUES (?, ?, 'postgres', 'PROD', '[]', ?, 'bob-id', ?, ?)`,
  );
  const properties = {
    password: 'urn:li:dataHubSecret:pg',
    deep: { list: [{ x: 'urn:li:dataHubSecret:kafka' }, 'urn:li:dataHubSecret:gone'] },
    again: 'urn:li:dataHubSecret:pg',
    odd: 'urn:li:dataHubSecret:odd #name',
    // Not references: another URN kind, a different case, an object key.
    other: 'urn:li:dataset:x',
    upper: 'URN:LI:DATAHUBSECRET:pg',
    'urn:li:dataHubSecret:kafka': 1,
  };
  addDataset.run('urn:a', 'a', JSON.stringify(properties), at, at);
  addDataset.run('urn:b', 'b', JSON.stringify({ host: 'x' }), at, at);

  migrate(db, { migrationsFolder: shippedFiles().migrationsFolder });
  const all = (query: string) => sqlite.prepare(query).all() as Record<string, unknown>[];
  const secrets = all('SELECT urn, id FROM catalog_secrets ORDER BY urn') as { urn: string; id: string }[];
  assert.equal(secrets.length, 3);
  for (const s of secrets) assert.match(s.id, UUID_V4, s.urn);
  assert.equal(new Set(secrets.map((s) => s.id)).size, 3, 'distinct ids');
  const idOf = (name: string) => secrets.find((s) => s.urn === `urn:li:dataHubSecret:${name}`)?.id;
  const bindings = all(
    'SELECT dataset_urn, reference, secret_id, bound_by FROM catalog_dataset_secrets ORDER BY reference',
  );
  // A later migration records each binder; the bindings made here were authorized against the creator.
  const bound = { dataset_urn: 'urn:a', bound_by: 'bob-id' };
  assert.deepEqual(bindings, [
    { ...bound, reference: 'urn:li:dataHubSecret:kafka', secret_id: idOf('kafka') },
    { ...bound, reference: 'urn:li:dataHubSecret:odd #name', secret_id: idOf('odd #name') },
    { ...bound, reference: 'urn:li:dataHubSecret:pg', secret_id: idOf('pg') },
  ]);
  // The rebuilt table keeps its rows intact and its unique id.
  const kept = all("SELECT name, kek_version, created_at FROM catalog_secrets WHERE name = 'pg'");
  assert.deepEqual(kept, [{ name: 'pg', kek_version: 1, created_at: at }]);
  assert.throws(() => sqlite.prepare('UPDATE catalog_secrets SET id = ?').run(idOf('pg')), /UNIQUE/);
  sqlite.prepare('DELETE FROM catalog_datasets WHERE urn = ?').run('urn:a');
  assert.deepEqual(all('SELECT * FROM catalog_dataset_secrets'), [], 'bindings go with the dataset');
});
