/**
 * What `meshgate restore` and `meshgate backup` refuse, and that a refusal
 * writes nothing: a damaged or forged backup (a changed byte, an extra or
 * linked file, a path that climbs out, an entry aimed at the KEK folder, a
 * schema from a newer build), a non-empty data dir without --force, and a
 * backup target that exists or lies inside the data dir.
 */
import assert from 'node:assert/strict';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { editManifest, entryOf, meshgate } from '../../../helpers/backup.ts';
import { freshPostgresDatabase, testNodeKeyFile } from '../../../helpers/engine.ts';
import { startTestGateway } from '../../../helpers/gateway.ts';

test('backup and restore refusals: forged or damaged backups, occupied data dirs, bad targets', async (t) => {
  const gw = await startTestGateway(t);
  await gw.adminToken();
  const root = mkdtempSync(join(tmpdir(), 'meshgate-refusals-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const good = join(root, 'good');
  const made = await meshgate(['backup', good, '--data-dir', gw.dataDir]);
  assert.equal(made.code, 0, made.stderr);

  const existing = await meshgate(['backup', good, '--data-dir', gw.dataDir]);
  assert.equal(existing.code, 1);
  assert.match(existing.stderr, /already exists: a backup never overwrites one/);
  const inside = await meshgate(['backup', join(gw.dataDir, 'b'), '--data-dir', gw.dataDir]);
  assert.equal(inside.code, 1);
  assert.match(inside.stderr, /is inside the data dir/);
  assert.ok(!existsSync(join(gw.dataDir, 'b')));
  assert.equal((await meshgate(['backup', '--data-dir', gw.dataDir])).code, 2, 'the folder is required');

  /** A copy of the good backup, altered by `damage`; the restore must refuse it with `reason` and write nothing. */
  async function refusedRestore(name: string, damage: (dir: string) => void, reason: RegExp) {
    const forged = join(root, `forged-${name}`);
    cpSync(good, forged, { recursive: true });
    damage(forged);
    const target = join(root, `target-${name}`);
    const result = await meshgate(['restore', forged, '--data-dir', target]);
    assert.equal(result.code, 1, `${name}: ${result.stdout}`);
    assert.match(result.stderr, reason, name);
    assert.deepEqual(readdirSync(target).sort(), ['serve.lock'], `${name}: nothing restored, no staging left`);
  }

  await refusedRestore(
    'flipped-byte',
    (dir) => {
      const file = join(dir, 'keys', 'signing-key.jwk.json');
      const bytes = readFileSync(file);
      bytes[10] = (bytes[10] as number) ^ 1;
      writeFileSync(file, bytes);
    },
    /keys\/signing-key\.jwk\.json .* does not match its manifest/,
  );
  await refusedRestore(
    'extra-file',
    (dir) => writeFileSync(join(dir, 'tls', 'planted.pem'), 'x'),
    /files its manifest does not list: tls\/planted\.pem/,
  );
  await refusedRestore(
    'symlink',
    (dir) => symlinkSync('/etc/passwd', join(dir, 'tls', 'link')),
    /neither a file nor a folder/,
  );
  await refusedRestore(
    'missing-file',
    (dir) => rmSync(join(dir, 'tls', 'ca.pem')),
    /lacks files its manifest lists: tls\/ca\.pem/,
  );
  await refusedRestore(
    'climbs-out',
    (dir) => {
      mkdirSync(join(dir, 'x'));
      writeFileSync(join(dir, 'x', 'evil'), 'owned');
      editManifest(dir, (m) => m.files.push({ ...entryOf(dir, 'x/evil'), path: '../x/evil' }));
    },
    /files\.\d+\.path: must be a relative path of plain names/,
  );
  await refusedRestore(
    'aims-at-kek',
    (dir) => {
      mkdirSync(join(dir, 'keys', 'kek'));
      writeFileSync(join(dir, 'keys', 'kek', 'kek-v1.key'), `${Buffer.alloc(32, 7).toString('base64')}\n`);
      editManifest(dir, (m) => m.files.push(entryOf(dir, 'keys/kek/kek-v1.key')));
    },
    /lists keys\/kek\/kek-v1\.key, which no backup holds/,
  );
  await refusedRestore(
    'live-wal',
    (dir) => {
      writeFileSync(join(dir, 'meshgate.db-wal'), 'x');
      editManifest(dir, (m) => m.files.push(entryOf(dir, 'meshgate.db-wal')));
    },
    /lists meshgate\.db-wal, which no backup holds/,
  );
  await refusedRestore(
    'newer-schema',
    (dir) => {
      const db = new Database(join(dir, 'meshgate.db'));
      db.prepare(
        'UPDATE __drizzle_migrations SET created_at = ? WHERE created_at = ' +
          '(SELECT max(created_at) FROM __drizzle_migrations)',
      ).run(9e12);
      db.close();
      editManifest(dir, (m) => {
        m.files[0] = entryOf(dir, 'meshgate.db');
      });
    },
    /made by a newer meshgate/,
  );
  await refusedRestore(
    'not-sqlite',
    (dir) => {
      writeFileSync(join(dir, 'meshgate.db'), 'not a database at all, padded'.repeat(200));
      editManifest(dir, (m) => {
        m.files[0] = entryOf(dir, 'meshgate.db');
      });
    },
    /is not a readable meshgate database/,
  );
  await refusedRestore(
    'no-manifest',
    (dir) => rmSync(join(dir, 'MANIFEST.json')),
    /is not a meshgate backup: no MANIFEST\.json/,
  );
  await refusedRestore(
    'wrong-format',
    (dir) => editManifest(dir, (m) => Object.assign(m, { format: 'tar' })),
    /format: Invalid input/,
  );
  assert.ok(
    !existsSync(join(root, 'x', 'evil')) && !existsSync(join(root, 'x')),
    'nothing was written outside the target',
  );

  // A non-empty data dir: refused without --force; --force replaces its content but keeps the KEK folder.
  const occupied = join(root, 'occupied');
  const kekFile = join(occupied, 'keys', 'kek', 'kek-v1.key');
  mkdirSync(join(occupied, 'keys', 'kek'), { recursive: true, mode: 0o700 });
  writeFileSync(kekFile, readFileSync(join(gw.dataDir, 'keys', 'kek', 'kek-v1.key')), { mode: 0o600 });
  const kekOnly = await meshgate(['restore', good, '--data-dir', join(root, 'kek-only')]);
  assert.equal(kekOnly.code, 0, 'a missing data dir is created');
  writeFileSync(join(occupied, 'stale.txt'), 'old');
  const refused = await meshgate(['restore', good, '--data-dir', occupied]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /is not empty \(.*stale\.txt\): restore into an empty data dir, or pass --force/);
  rmSync(join(occupied, 'stale.txt'));
  const onlyKek = await meshgate(['restore', good, '--data-dir', occupied]);
  assert.equal(onlyKek.code, 0, `a data dir holding only the KEK counts as empty: ${onlyKek.stderr}`);
  assert.match(onlyKek.stdout, /kek-v1\.key: ok/);
  writeFileSync(join(occupied, 'stale.txt'), 'old');
  const forced = await meshgate(['restore', good, '--data-dir', occupied, '--force']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.ok(!existsSync(join(occupied, 'stale.txt')), '--force removed what was there');
  assert.deepEqual(
    readFileSync(kekFile),
    readFileSync(join(gw.dataDir, 'keys', 'kek', 'kek-v1.key')),
    'the KEK folder is kept',
  );
  assert.equal((await meshgate(['restore', good, 'extra', '--data-dir', occupied])).code, 2);
});

test('on PostgreSQL, backup and restore point to the database’s own tools and touch nothing', async (t) => {
  const database = await freshPostgresDatabase();
  const node = await startTestGateway(t, { database, nodeKeyFile: testNodeKeyFile() });
  const target = join(tmpdir(), `meshgate-pg-backup-${process.pid}`);
  const args = ['--data-dir', node.dataDir, '--database', database];
  for (const command of ['backup', 'restore']) {
    const result = await meshgate([command, target, ...args, '--node-key-file', testNodeKeyFile()]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /keeps its state in PostgreSQL: back it up with pg_dump/);
    assert.ok(!result.stderr.includes(decodeURIComponent(new URL(database).password)), 'no password echoed');
    assert.equal(existsSync(target), false, `${command} wrote nothing`);
  }
});
