/** scrypt password hashes, verified in constant time; unknown users cost the same as known ones. */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 16384;
const R = 8;
const P = 1;
const KEY_LEN = 32;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_LEN, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A fixed hash to verify against when the user does not exist (no timing oracle). */
const DUMMY =
  `scrypt$${N}$${R}$${P}$${Buffer.alloc(16).toString('base64url')}$` + `${Buffer.alloc(KEY_LEN).toString('base64url')}`;

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const parts = (stored ?? DUMMY).split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p));
  return (
    stored !== null && stored !== undefined && actual.length === expected.length && timingSafeEqual(actual, expected)
  );
}

/** A generated password for the bootstrap admin and resets: 24 url-safe characters. */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}
