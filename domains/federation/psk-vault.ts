/**
 * PSKs at rest (secrets never stored in clear): AES-256-GCM
 * under a key kept in <dataDir>/keys/federation-psk.key (mode 0600), with
 * the record id as associated data so a ciphertext cannot be moved to
 * another record. The catalog's two-layer envelope scheme can replace this
 * key file when it lands; the `v1:` prefix marks the format.
 */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class PskVault {
  private constructor(private readonly key: KeyObject) {}

  static open(dataDir: string): PskVault {
    const dir = join(dataDir, 'keys');
    const file = join(dir, 'federation-psk.key');
    if (!existsSync(file)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
    }
    const raw = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (raw.length !== 32) throw new Error(`${file}: expected a 32-byte base64 key`);
    return new PskVault(createSecretKey(raw));
  }

  seal(recordId: string, psk: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(recordId));
    const data = Buffer.concat([cipher.update(psk, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join(':');
  }

  open(recordId: string, sealed: string): string {
    const [version, iv, tag, data] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('unknown PSK format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64')).setAAD(Buffer.from(recordId));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
  }
}
