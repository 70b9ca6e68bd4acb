import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decryptSecret, encryptSecret, generateKey, keyCheck, rewrapKey } from '../../../../domains/catalog/crypto.ts';

const kek1 = { version: 1, key: generateKey() };
const kek2 = { version: 2, key: generateKey() };
const urn = 'urn:li:dataHubSecret:demo';

test('each secret has its own data key; the value decrypts only with its KEK and URN', () => {
  const a = encryptSecret(urn, 'value-1', kek1);
  const b = encryptSecret(urn, 'value-1', kek1);
  assert.notDeepEqual(a.ciphertext, b.ciphertext, 'fresh data key and IV per secret');
  assert.equal(decryptSecret(urn, a, kek1), 'value-1');
  assert.throws(() => decryptSecret(urn, a, kek2), 'wrong KEK');
  assert.throws(() => decryptSecret('urn:li:dataHubSecret:other', a, kek1), 'URN bound as associated data');
  assert.throws(() => decryptSecret(urn, { ...a, kekVersion: 2 }, { ...kek1, version: 2 }), 'KEK version bound too');
  const tampered = Buffer.from(a.ciphertext);
  tampered[14] = (tampered[14] as number) ^ 1;
  assert.throws(() => decryptSecret(urn, { ...a, ciphertext: tampered }, kek1), 'GCM tag');
  assert.throws(() => decryptSecret(urn, { ...a, ciphertext: b.ciphertext }, kek1), 'ciphertext of another envelope');
});

test('rewrapping changes the wrapped key only; the value ciphertext still opens', () => {
  const env = encryptSecret(urn, 'ünïcødé secret', kek1);
  const wrappedKey = rewrapKey(urn, env.wrappedKey, kek1, kek2);
  assert.notDeepEqual(wrappedKey, env.wrappedKey);
  assert.equal(decryptSecret(urn, { ciphertext: env.ciphertext, wrappedKey, kekVersion: 2 }, kek2), 'ünïcødé secret');
  assert.throws(() => rewrapKey('urn:li:dataHubSecret:x', env.wrappedKey, kek1, kek2));
});

test('the key-check value identifies a key without revealing it', () => {
  assert.equal(keyCheck(kek1.key), keyCheck(Buffer.from(kek1.key)));
  assert.notEqual(keyCheck(kek1.key), keyCheck(kek2.key));
  assert.ok(!keyCheck(kek1.key).includes(kek1.key.toString('base64url').slice(0, 8)));
});
