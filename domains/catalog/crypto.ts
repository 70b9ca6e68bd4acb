/**
 * Two-layer envelope encryption of secret values. Each secret gets its own random AES-256-GCM data key
 * (DEK); the DEK is wrapped by a versioned key-encryption key (KEK). The
 * secret's URN is bound as associated data in both layers, so a ciphertext
 * or wrapped key copied onto another row fails to open. Rotation rewraps
 * DEKs only; value ciphertexts never change.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_BYTES = 32;

function seal(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

/** Throws on any tampering (GCM tag), wrong key or wrong associated data. */
function open(key: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  if (sealed.length < IV_BYTES + TAG_BYTES) throw new Error('sealed blob too short');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
}

const valueAad = (urn: string) => Buffer.from(`meshgate/catalog/secret-value/v1\0${urn}`, 'utf8');
const dekAad = (urn: string, kekVersion: number) =>
  Buffer.from(`meshgate/catalog/secret-dek/v1\0${urn}\0${kekVersion}`, 'utf8');

export interface Envelope {
  ciphertext: Buffer;
  wrappedKey: Buffer;
  kekVersion: number;
}

export interface Kek {
  version: number;
  key: Buffer;
}

export function encryptSecret(urn: string, value: string, kek: Kek): Envelope {
  const dek = randomBytes(KEY_BYTES);
  try {
    return {
      ciphertext: seal(dek, Buffer.from(value, 'utf8'), valueAad(urn)),
      wrappedKey: seal(kek.key, dek, dekAad(urn, kek.version)),
      kekVersion: kek.version,
    };
  } finally {
    dek.fill(0);
  }
}

export function decryptSecret(urn: string, envelope: Envelope, kek: Kek): string {
  const dek = open(kek.key, envelope.wrappedKey, dekAad(urn, envelope.kekVersion));
  try {
    return open(dek, envelope.ciphertext, valueAad(urn)).toString('utf8');
  } finally {
    dek.fill(0);
  }
}

/** Unwraps with `from` and wraps the same DEK with `to`; the value ciphertext is untouched. */
export function rewrapKey(urn: string, wrappedKey: Buffer, from: Kek, to: Kek): Buffer {
  const dek = open(from.key, wrappedKey, dekAad(urn, from.version));
  try {
    return seal(to.key, dek, dekAad(urn, to.version));
  } finally {
    dek.fill(0);
  }
}

/** Key-check value stored in the ledger to recognize the right key file; one-way. */
export function keyCheck(key: Buffer): string {
  return createHmac('sha256', key).update('meshgate/catalog/kek-check/v1').digest('base64url').slice(0, 22);
}

export function generateKey(): Buffer {
  return randomBytes(KEY_BYTES);
}
