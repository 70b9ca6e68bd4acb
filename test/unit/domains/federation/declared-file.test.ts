/**
 * The declared federation file's fleet form: each pair's PSK from the fleet key is the same on both sides and distinct
 * for every pair, names that would run together with a separator included; and a gateway reading its file at start
 * refuses a fleet, whose key would let it sign as any member.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DeclaredFileError, fleetPsk, readDeclaredFile } from '../../../../domains/federation/declared-file.ts';

const KEY = 'k'.repeat(40);

test('a pair has one PSK from either side, and no two pairs share one', () => {
  assert.equal(fleetPsk(KEY, 'c001', 'c002'), fleetPsk(KEY, 'c002', 'c001'));
  assert.notEqual(fleetPsk(KEY, 'c001', 'c002'), fleetPsk(KEY, 'c001', 'c003'));
  assert.notEqual(fleetPsk(KEY, 'a', 'b\nc'), fleetPsk(KEY, 'a\nb', 'c'), 'a separator inside a name is no boundary');
});

test('a fleet file is read by the operator, refused by a gateway at start', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-declared-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'fleet.key'), KEY);
  const file = join(dir, 'fleet.json');
  const members = [
    { name: 'c001', address: '127.0.0.1:8443' },
    { name: 'c002', address: '127.0.0.1:9443' },
  ];
  writeFileSync(file, JSON.stringify({ fleet: { psk_file: 'fleet.key', members } }));
  const peers = readDeclaredFile(file, 'c001', {});
  assert.deepEqual(
    peers.map((p) => p.name),
    ['c002'],
  );
  assert.throws(
    () => readDeclaredFile(file, 'c001', {}, { fleetKey: false }),
    (error: Error) => error instanceof DeclaredFileError && /not read by a gateway at start/.test(error.message),
  );
});
