/**
 * The KEK key files: one `kek-v<N>.key` (base64 of 32 bytes, mode 0600) per
 * version in a folder of mode 0700 — `secrets.kekDir`, by default
 * `<dataDir>/keys/kek`. The database only records which versions exist
 * (kek-ledger.ts); a copy of the database alone decrypts nothing. Writes
 * are atomic (temp file, fsync, rename, fsync of the folder) because
 * rotation must survive a crash at any instant.
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../gateway/config/schema.ts';
import { KEY_BYTES } from './crypto.ts';

const FILE = /^kek-v(\d+)\.key$/;

export function kekFileName(version: number): string {
  return `kek-v${version}.key`;
}

export function kekDirOf(config: Readonly<Config>): string {
  return config.secrets.kekDir ?? join(config.dataDir, 'keys', 'kek');
}

export class KekRing {
  readonly #cache = new Map<number, Buffer>();

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  versions(): number[] {
    return readdirSync(this.dir)
      .map((name) => FILE.exec(name)?.[1])
      .filter((v): v is string => v !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  /** The key of `version`, or null when its file is absent. Refuses files others can read. */
  get(version: number): Buffer | null {
    const cached = this.#cache.get(version);
    if (cached) return cached;
    const file = this.#file(version);
    let mode: number;
    try {
      mode = statSync(file).mode;
    } catch {
      return null;
    }
    if ((mode & 0o077) !== 0) throw new Error(`${file}: a key file must be mode 0600`);
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`${file}: not a ${KEY_BYTES}-byte key`);
    this.#cache.set(version, key);
    return key;
  }

  add(version: number, key: Buffer): void {
    const tmp = join(this.dir, `.kek-v${version}.key.tmp`);
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, `${key.toString('base64')}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.#file(version));
    this.#syncDir();
    this.#cache.set(version, key);
  }

  remove(version: number): void {
    this.#cache.get(version)?.fill(0);
    this.#cache.delete(version);
    try {
      unlinkSync(this.#file(version));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    this.#syncDir();
  }

  #file(version: number): string {
    return join(this.dir, kekFileName(version));
  }

  #syncDir(): void {
    const fd = openSync(this.dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}
