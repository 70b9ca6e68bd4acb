/**
 * PSKs at rest (secrets never stored in clear): AES-256-GCM
 * under a key kept in <dataDir>/keys/federation-psk.key (mode 0600), with
 * the record id as associated data so a ciphertext cannot be moved to
 * another record. The catalog's two-layer envelope scheme can replace this
 * key file when it lands; the `v1:` prefix marks the format.
 *
 * The same key also gives the lookup key of PSK key ids (psk-key-id.ts): what the database stores to find a WAITING
 * record by the key id an initiator names is HMAC-SHA256 of the key id under a key derived from this one (HKDF,
 * RFC 5869), so whoever reads the database, a backup or a dump without this key can test no PSK guess against it.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** HKDF's `info` (RFC 5869 §3.2): the lookup key is bound to its one use, apart from the sealing key it comes from. */
const LOOKUP_INFO = 'meshgate psk key id lookup v1';

export class PskVault {
  private readonly lookupKey: KeyObject;

  private constructor(private readonly key: KeyObject) {
    this.lookupKey = createSecretKey(Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), LOOKUP_INFO, 32)));
  }

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

  /** What the database stores for a PSK key id (`psk_key_id`): HMAC-SHA256 under the lookup key, hex. */
  keyIdLookup(keyId: string): string {
    return createHmac('sha256', this.lookupKey).update(keyId, 'utf8').digest('hex');
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
