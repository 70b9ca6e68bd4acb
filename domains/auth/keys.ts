/**
 * The cluster's token-signing key (ES256), kept in <dataDir>/keys with
 * mode 0600 and created at first start. Its public half is published as
 * JWKS so peers and the shared realm can validate our tokens.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

export async function loadSigningKey(dataDir: string): Promise<SigningKey> {
  const dir = join(dataDir, 'keys');
  const file = join(dir, 'signing-key.jwk.json');
  let privateJwk: JWK;
  if (existsSync(file)) {
    privateJwk = JSON.parse(readFileSync(file, 'utf8')) as JWK;
  } else {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateJwk = await exportJWK(pair.privateKey);
    writeFileSync(file, JSON.stringify(privateJwk), { mode: 0o600 });
  }
  const { d: _private, ...publicPart } = privateJwk;
  const kid = await calculateJwkThumbprint(publicPart);
  const publicJwk: JWK = { ...publicPart, kid, alg: 'ES256', use: 'sig' };
  return {
    kid,
    privateKey: (await importJWK(privateJwk, 'ES256')) as CryptoKey,
    publicKey: (await importJWK(publicJwk, 'ES256')) as CryptoKey,
    publicJwk,
  };
}
