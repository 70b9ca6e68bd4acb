import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { loadSigningKeyRing } from '../../../../domains/auth/keys.ts';

const NOW = 1_700_000_000;
const clock = () => NOW;

function dataDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-keys-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A data dir as gateways before the configurable algorithm left it: a P-256 private JWK without `alg`. */
async function legacyEs256(dir: string): Promise<string> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.privateKey);
  mkdirSync(join(dir, 'keys'), { recursive: true });
  writeFileSync(join(dir, 'keys', 'signing-key.jwk.json'), JSON.stringify(jwk), { mode: 0o600 });
  const { d: _d, ...publicPart } = jwk;
  return calculateJwkThumbprint(publicPart);
}

test('a new data dir gets an RS256 key, private file 0600, JWKS with n and e and no private member', async (t) => {
  const dir = dataDir(t);
  const ring = await loadSigningKeyRing(dir, 'RS256', () => 0, clock);
  assert.equal(ring.active.alg, 'RS256');
  assert.equal(statSync(join(dir, 'keys', 'signing-key.jwk.json')).mode & 0o777, 0o600);
  const [key, ...others] = ring.jwks().keys;
  assert.deepEqual(others, []);
  assert.deepEqual(Object.keys(key ?? {}).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use']);
  const again = await loadSigningKeyRing(dir, 'RS256', () => 0, clock);
  assert.equal(again.active.kid, ring.active.kid, 'the same key across restarts');
});

test(
  'upgrade: a legacy ES256 key keeps its kid under ES256, and moving to ' +
    'RS256 retires it with its private half destroyed',
  async (t) => {
    const dir = dataDir(t);
    const legacyKid = await legacyEs256(dir);
    const kept = await loadSigningKeyRing(dir, 'ES256', () => 0, clock);
    assert.deepEqual([kept.active.alg, kept.active.kid], ['ES256', legacyKid]);
    const old = await new SignJWT({ sub: 'u' })
      .setProtectedHeader({ alg: 'ES256', kid: legacyKid })
      .sign(kept.active.privateKey);

    const seen: number[] = [];
    const ring = await loadSigningKeyRing(dir, 'RS256', (retiredAt) => (seen.push(retiredAt), retiredAt + 900), clock);
    assert.deepEqual(seen, [NOW]);
    assert.equal(ring.active.alg, 'RS256');
    assert.deepEqual(
      ring.jwks().keys.map((k) => [k.kty, k.alg]),
      [
        ['RSA', 'RS256'],
        ['EC', 'ES256'],
      ],
    );
    assert.deepEqual(ring.overlaps(), [{ kid: legacyKid, alg: 'ES256', verifyUntil: NOW + 900 }]);
    const retiredFile = readFileSync(join(dir, 'keys', 'retired', `${legacyKid}.jwk.json`), 'utf8');
    assert.equal(JSON.parse(retiredFile).d, undefined, 'no private part of a retired key is kept');
    const oldKey = ring.keyFor({ kid: legacyKid, alg: 'ES256' });
    assert.ok(oldKey);
    assert.equal((await jwtVerify(old, oldKey.publicKey)).payload.sub, 'u');
    assert.equal(
      ring.keyFor({ kid: legacyKid, alg: 'RS256' }),
      undefined,
      'a kid is never used with another algorithm',
    );
  },
);

test(
  'a retired key whose tokens have all expired leaves the JWKS of a ' +
    'running gateway, and its file at the next start',
  async (t) => {
    const dir = dataDir(t);
    const legacyKid = await legacyEs256(dir);
    let now = NOW;
    const ring = await loadSigningKeyRing(
      dir,
      'RS256',
      (retiredAt) => retiredAt + 60,
      () => now,
    );
    assert.equal(ring.jwks().keys.length, 2);
    now = NOW + 61;
    assert.deepEqual(
      ring.jwks().keys.map((k) => k.kid),
      [ring.active.kid],
    );
    assert.equal(ring.keyFor({ kid: legacyKid, alg: 'ES256' }), undefined);
    assert.equal(readdirSync(join(dir, 'keys', 'retired')).length, 1);
    await loadSigningKeyRing(
      dir,
      'RS256',
      (retiredAt) => retiredAt + 60,
      () => now,
    );
    assert.deepEqual(readdirSync(join(dir, 'keys', 'retired')), []);
  },
);
