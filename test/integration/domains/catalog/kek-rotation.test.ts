/**
 * KEK rotation through the real CLI (`bin/meshgate rotate-kek`) beside a
 * live gateway on the same data dir: a run killed (SIGKILL) midway, then
 * resumed; every secret still decrypts, value ciphertexts never change,
 * the old KEK is retired and its key file deleted.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { generateKey } from '../../../../domains/catalog/crypto.ts';
import { KekRing } from '../../../../domains/catalog/kek-ring.ts';
import { revealCurrent } from '../../../helpers/catalog.ts';
import { TEST_ENGINE, withTestDatabase } from '../../../helpers/engine.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

const BIN = fileURLToPath(new URL('../../../../bin/meshgate', import.meta.url));

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function rotate(dataDir: string, extraEnv: Record<string, string> = {}): Promise<RunResult> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...extraEnv };
  return new Promise((resolve) => {
    execFile(
      BIN,
      withTestDatabase(['rotate-kek', '--data-dir', dataDir, '--batch', '2']),
      { env, timeout: 60_000 },
      (error, stdout, stderr) => {
        const e = error as (Error & { code?: number; signal?: NodeJS.Signals }) | null;
        resolve({
          code: e ? (typeof e.code === 'number' ? e.code : null) : 0,
          signal: e?.signal ?? null,
          stdout,
          stderr,
        });
      },
    );
  });
}

interface Row {
  urn: string;
  id: string;
  ciphertext: Buffer;
  kek_version: number;
}

const rows = (gw: TestGateway) =>
  gw.gateway.deps.sql
    .prepare('SELECT urn, id, ciphertext, kek_version FROM catalog_secrets ORDER BY urn')
    .all() as Row[];
const ledger = (gw: TestGateway) =>
  gw.gateway.deps.sql.prepare('SELECT version, state FROM catalog_keks ORDER BY version').all() as {
    version: number;
    state: string;
  }[];
const keyFiles = (gw: TestGateway) => readdirSync(join(gw.dataDir, 'keys', 'kek')).sort();

test(
  'rotate-kek killed midway resumes; every secret decrypts; ciphertexts ' + 'untouched; the old KEK is retired',
  async (t) => {
    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    const values = new Map<string, string>();
    for (let i = 0; i < 12; i++) {
      const value = `value-${i}-${'ü'.repeat(i)}`;
      const res = await gw.request('POST', '/api/catalog/secrets/', { token: admin, json: { name: `s/${i}`, value } });
      values.set(res.json, value);
    }
    const before = rows(gw);
    assert.deepEqual(ledger(gw), [{ version: 1, state: 'active' }]);
    assert.deepEqual(keyFiles(gw), ['kek-v1.key']);

    const crashed = await rotate(gw.dataDir, { MESHGATE_TEST_ROTATE_CRASH_AFTER: '5' });
    assert.equal(crashed.signal, 'SIGKILL', `killed midway: ${crashed.stderr}`);
    const mid = rows(gw);
    const moved = mid.filter((r) => r.kek_version === 2).length;
    assert.ok(moved >= 5 && moved < 12, `partially rewrapped: ${moved}`);
    assert.deepEqual(ledger(gw), [
      { version: 1, state: 'retiring' },
      { version: 2, state: 'active' },
    ]);
    assert.deepEqual(keyFiles(gw), ['kek-v1.key', 'kek-v2.key']);
    // The live gateway reads both versions meanwhile, and wraps new secrets under the new one.
    for (const [urn, value] of values) assert.equal(revealCurrent(gw, urn), value);
    const during = await gw.request('POST', '/api/catalog/secrets/', {
      token: admin,
      json: { name: 'written-during', value: 'during' },
    });
    values.set(during.json, 'during');
    assert.equal(rows(gw).find((r) => r.urn === during.json)?.kek_version, 2);

    const resumed = await rotate(gw.dataDir);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /resumed and finished rotation: active KEK v2, \d+ data keys rewrapped, retired v1/);
    const after = rows(gw);
    assert.ok(after.every((r) => r.kek_version === 2));
    for (const old of before) {
      assert.deepEqual(after.find((r) => r.urn === old.urn)?.ciphertext, old.ciphertext, 'value ciphertext untouched');
      assert.equal(after.find((r) => r.urn === old.urn)?.id, old.id, 'the id stays, so bound datasets follow');
    }
    assert.deepEqual(ledger(gw), [
      { version: 1, state: 'retired' },
      { version: 2, state: 'active' },
    ]);
    assert.deepEqual(keyFiles(gw), ['kek-v2.key'], 'the retired key file is deleted');
    for (const [urn, value] of values) assert.equal(revealCurrent(gw, urn), value);
    await gw.restart();
    for (const [urn, value] of values) assert.equal(revealCurrent(gw, urn), value, 'after a restart');

    const again = await rotate(gw.dataDir);
    assert.match(again.stdout, /^finished rotation: active KEK v3, 13 data keys rewrapped, retired v2/);
    assert.deepEqual(keyFiles(gw), ['kek-v3.key']);
    for (const [urn, value] of values) assert.equal(revealCurrent(gw, urn), value);
  },
);

test('a key file written before the crash is adopted; a wrong or world-readable key file stops start', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const urn = (await gw.request('POST', '/api/catalog/secrets/', { token: admin, json: { name: 'x', value: 'kept' } }))
    .json;
  // As if a rotation died between writing kek-v2.key and recording it in the database.
  const ring = new KekRing(join(gw.dataDir, 'keys', 'kek'));
  ring.add(2, generateKey());
  const adopted = await rotate(gw.dataDir);
  assert.match(adopted.stdout, /resumed and finished rotation: active KEK v2, 1 data keys rewrapped, retired v1/);
  assert.equal(revealCurrent(gw, urn), 'kept');
  await gw.stop();
  const file = join(gw.dataDir, 'keys', 'kek', 'kek-v2.key');
  chmodSync(file, 0o644);
  await assert.rejects(gw.start(), /mode 0600/);
  chmodSync(file, 0o600);
  const published = readFileSync(file);
  writeFileSync(file, `${generateKey().toString('base64')}\n`, { mode: 0o600 });
  if (TEST_ENGINE === 'sqlite') {
    await assert.rejects(gw.start(), /does not match the database/);
    assert.ok(existsSync(file));
    return;
  }
  // On PostgreSQL the cluster's copy (sealed in the database at rotation) wins over a node's damaged one.
  await gw.start();
  assert.ok(readFileSync(file).equals(published), 'the cluster identity restored the key file');
  assert.equal(revealCurrent(gw, urn), 'kept');
});
