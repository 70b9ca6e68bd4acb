/**
 * The cluster's token-signing keys, in <dataDir>/keys (directory 0700, files 0600):
 *
 * - `signing-key.jwk.json`, the active private key: RS256 (RSA 2048, what
 *   Keycloak signs with by default and what the platform SDK's JWKS model
 *   requires: `n` and `e`), or ES256 when `auth.signingAlgorithm` says so. A
 *   file written before the algorithm was configurable holds a P-256 key
 *   without `alg`: it is ES256.
 * - `retired/<kid>.jwk.json`, the public half of each key a rotation replaced
 *   and the second it was retired. Its private half is destroyed at rotation.
 *
 * A change of `auth.signingAlgorithm` rotates at start: new tokens are signed
 * with the new key while tokens the old key signed stay valid until they
 * expire, so the JWKS publishes both during the overlap (RFC 7517 §5: a set
 * may hold several keys; the `kid` in the token header selects one).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { createServiceKey } from '../../gateway/services.ts';

export const SIGNING_ALGORITHMS = ['RS256', 'ES256'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

/** A public key tokens may be verified with; `retiredAt` is null for the active key. */
export interface VerificationKey {
  kid: string;
  alg: SigningAlgorithm;
  publicKey: CryptoKey;
  publicJwk: JWK;
  retiredAt: number | null;
}

export interface SigningKey extends VerificationKey {
  privateKey: CryptoKey;
}

/** When tokens signed by a key retired at `retiredAt` (epoch seconds) may still be alive. */
export type OutstandingUntil = (retiredAt: number) => number;

/**
 * What the realm tells others about its keys (diagnose): the algorithm it signs with and the retired keys still
 * published.
 */
export interface SigningKeyOverview {
  algorithm(): SigningAlgorithm;
  overlaps(): { kid: string; alg: SigningAlgorithm; verifyUntil: number }[];
}

export const SIGNING_KEYS = createServiceKey<SigningKeyOverview>('signing-keys');

const ACTIVE_FILE = 'signing-key.jwk.json';
const RETIRED_DIR = 'retired';

/** The key set: the active key signs; it and the retired keys whose tokens may still live verify and are published. */
export class SigningKeyRing {
  constructor(
    readonly active: SigningKey,
    private readonly retired: readonly (VerificationKey & { verifyUntil: number })[],
    private readonly nowSeconds: () => number,
  ) {}

  /** The active key first, then the retired keys still in their overlap. */
  verificationKeys(): VerificationKey[] {
    const now = this.nowSeconds();
    return [this.active, ...this.retired.filter((key) => key.verifyUntil > now)];
  }

  /** The key a token header names; the algorithm must be the key's own, so no key is used with another alg. */
  keyFor(header: { kid?: string | undefined; alg?: string | undefined }): VerificationKey | undefined {
    return this.verificationKeys().find((key) => key.kid === header.kid && key.alg === header.alg);
  }

  /** Until when a retired key is still published (epoch seconds), for diagnostics. */
  overlaps(): { kid: string; alg: SigningAlgorithm; verifyUntil: number }[] {
    const now = this.nowSeconds();
    return this.retired
      .filter((key) => key.verifyUntil > now)
      .map(({ kid, alg, verifyUntil }) => ({ kid, alg, verifyUntil }));
  }

  jwks(): { keys: JWK[] } {
    return { keys: this.verificationKeys().map((key) => key.publicJwk) };
  }
}

export async function loadSigningKeyRing(
  dataDir: string,
  algorithm: SigningAlgorithm,
  outstandingUntil: OutstandingUntil,
  nowSeconds: () => number,
): Promise<SigningKeyRing> {
  const dir = join(dataDir, 'keys');
  const retiredDir = join(dir, RETIRED_DIR);
  mkdirSync(retiredDir, { recursive: true, mode: 0o700 });
  const activeFile = join(dir, ACTIVE_FILE);
  let active = existsSync(activeFile) ? await importPrivate(JSON.parse(readFileSync(activeFile, 'utf8')) as JWK) : null;
  if (active?.alg !== algorithm) {
    if (active) {
      // The retired record is written first: a crash before the new key lands leaves the old key active, and the next
      // start rotates again.
      const record = { ...active.publicJwk, retired_at: nowSeconds() };
      writeFileSync(join(retiredDir, `${active.kid}.jwk.json`), JSON.stringify(record), { mode: 0o600 });
    }
    const pair = await generateKeyPair(algorithm, {
      extractable: true,
      ...(algorithm === 'RS256' ? { modulusLength: 2048 } : {}),
    });
    const privateJwk = { ...(await exportJWK(pair.privateKey)), alg: algorithm };
    writeFileSync(`${activeFile}.tmp`, JSON.stringify(privateJwk), { mode: 0o600 });
    renameSync(`${activeFile}.tmp`, activeFile);
    active = await importPrivate(privateJwk);
  }
  const retired: (VerificationKey & { verifyUntil: number })[] = [];
  for (const name of readdirSync(retiredDir).filter((n) => n.endsWith('.jwk.json'))) {
    const { retired_at: retiredAt, ...jwk } = JSON.parse(readFileSync(join(retiredDir, name), 'utf8')) as JWK & {
      retired_at: number;
    };
    const verifyUntil = outstandingUntil(retiredAt);
    // Every token it signed has expired: nothing can need it any more.
    if (verifyUntil <= nowSeconds()) rmSync(join(retiredDir, name), { force: true });
    else retired.push({ ...(await importPublic(jwk, retiredAt)), verifyUntil });
  }
  return new SigningKeyRing(active, retired, nowSeconds);
}

function algorithmOf(jwk: JWK): SigningAlgorithm {
  if (jwk.kty === 'RSA') return 'RS256';
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return 'ES256';
  throw new Error(`meshgate: unsupported signing key type ${String(jwk.kty)} ${String(jwk.crv ?? '')}`.trim());
}

/** The public members of a JWK (RFC 7518 §6.2.1, §6.3.1), whatever else the file holds. */
function publicMembers(jwk: JWK): JWK {
  return jwk.kty === 'RSA' ? { kty: jwk.kty, n: jwk.n, e: jwk.e } : { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y };
}

async function importPublic(jwk: JWK, retiredAt: number | null): Promise<VerificationKey> {
  const alg = algorithmOf(jwk);
  const members = publicMembers(jwk);
  // The thumbprint of the required members (RFC 7638) is stable across the upgrade that added `alg` to the file.
  const kid = await calculateJwkThumbprint(members);
  const publicJwk: JWK = { ...members, kid, alg, use: 'sig' };
  return { kid, alg, publicJwk, publicKey: (await importJWK(publicJwk, alg)) as CryptoKey, retiredAt };
}

async function importPrivate(privateJwk: JWK): Promise<SigningKey> {
  const verification = await importPublic(privateJwk, null);
  return {
    ...verification,
    privateKey: (await importJWK({ ...privateJwk, alg: verification.alg }, verification.alg)) as CryptoKey,
  };
}
