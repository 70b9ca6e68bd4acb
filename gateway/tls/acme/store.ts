/**
 * What ACME keeps in the data dir, under tls/acme/, every file 0600 and written whole (a new file of a random
 * name, created exclusively so no planted symlink is followed, synced, renamed over the old one, and the folder
 * synced, so a reader or a crash never leaves half of one): the account key, the issued certificate chain, its key
 * and the directory it came from, and the status `meshgate cert status` reads (names, directory, issuer,
 * not-after, next renewal, last error).
 */
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { ServerKeyPair } from '../serving-certificate.ts';

/** The stored certificate and the ACME directory that issued it (null: not recorded). */
export interface StoredCertificate extends ServerKeyPair {
  readonly directoryUrl: string | null;
}

export interface AcmeStatus {
  readonly names: readonly string[];
  /** The directory the names were last ordered from: a failure's backoff holds only for the same one. */
  readonly directoryUrl: string | null;
  readonly issuer: string | null;
  readonly serial: string | null;
  readonly notAfter: string | null;
  readonly nextRenewal: string | null;
  readonly lastError: string | null;
  readonly lastErrorAt: string | null;
  readonly failures: number;
}

export const NO_STATUS: AcmeStatus = {
  names: [],
  directoryUrl: null,
  issuer: null,
  serial: null,
  notAfter: null,
  nextRenewal: null,
  lastError: null,
  lastErrorAt: null,
  failures: 0,
};

export function acmeDir(dataDir: string): string {
  return join(dataDir, 'tls', 'acme');
}

function writeWhole(path: string, text: string): void {
  const temporary = `${path}.${randomBytes(8).toString('hex')}.tmp`;
  const file = openSync(temporary, 'wx', 0o600);
  try {
    try {
      writeSync(file, text);
      fsyncSync(file);
    } finally {
      closeSync(file);
    }
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  // The rename is durable once the folder's entry is (fsync(2)).
  const folder = openSync(join(path, '..'), 'r');
  try {
    fsyncSync(folder);
  } finally {
    closeSync(folder);
  }
}

function readIfThere(path: string): string | null {
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
}

export class AcmeStore {
  readonly dir: string;
  readonly #onCorruptStatus: (error: Error) => void;

  /** `onCorruptStatus`: told when status.json cannot be read or does not parse; it is then read as empty. */
  constructor(dataDir: string, onCorruptStatus: (error: Error) => void = () => {}) {
    this.dir = acmeDir(dataDir);
    this.#onCorruptStatus = onCorruptStatus;
  }

  #ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  /** The account key (PEM), created by `create` on first use; it signs every request to the CA. */
  async accountKey(create: () => Promise<string>): Promise<string> {
    const path = join(this.dir, 'account-key.pem');
    const stored = readIfThere(path);
    if (stored !== null) return stored;
    this.#ensureDir();
    const keyPem = await create();
    writeWhole(path, keyPem);
    return keyPem;
  }

  /** The certificate last issued, when there is one. */
  certificate(): StoredCertificate | null {
    const certPem = readIfThere(join(this.dir, 'certificate.pem'));
    const keyPem = readIfThere(join(this.dir, 'certificate-key.pem'));
    const directoryUrl = readIfThere(join(this.dir, 'certificate-directory'))?.trim() || null;
    return certPem !== null && keyPem !== null ? { certPem, keyPem, directoryUrl } : null;
  }

  /**
   * The key first, the directory last: a crash between two writes leaves a pair that fails its check, or a
   * certificate recorded as another directory's; either is not usable, and is ordered again.
   */
  saveCertificate(pair: ServerKeyPair, directoryUrl: string): void {
    this.#ensureDir();
    writeWhole(join(this.dir, 'certificate-key.pem'), pair.keyPem);
    writeWhole(join(this.dir, 'certificate.pem'), pair.certPem);
    writeWhole(join(this.dir, 'certificate-directory'), `${directoryUrl}\n`);
  }

  status(): AcmeStatus {
    try {
      const text = readIfThere(join(this.dir, 'status.json'));
      if (text === null) return NO_STATUS;
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      const status = { ...NO_STATUS, ...(parsed as Partial<AcmeStatus>) };
      if (!Array.isArray(status.names) || typeof status.failures !== 'number') throw new Error('unexpected fields');
      return status;
    } catch (error) {
      this.#onCorruptStatus(error as Error);
      return NO_STATUS;
    }
  }

  saveStatus(status: AcmeStatus): void {
    this.#ensureDir();
    writeWhole(join(this.dir, 'status.json'), `${JSON.stringify(status, null, 2)}\n`);
  }
}

/** The DNS names a certificate is for (its subjectAltName), lower-cased and sorted. */
export function certificateNames(certificate: X509Certificate): string[] {
  const names = (certificate.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4).toLowerCase());
  return [...new Set(names)].sort();
}

/**
 * A certificate the CA handed back is taken only if it is for exactly the names ordered, the key is ours, and it is
 * valid now: a CA that answers with another certificate (another customer's names, a mixed-up key) is refused,
 * and the certificate in use is kept.
 */
export function checkIssued(pair: ServerKeyPair, names: readonly string[], now: Date): X509Certificate {
  const certificate = new X509Certificate(pair.certPem);
  const got = certificateNames(certificate);
  const wanted = [...new Set(names.map((n) => n.toLowerCase()))].sort();
  if (got.join(',') !== wanted.join(',')) {
    throw new Error(`the CA issued a certificate for ${got.join(', ') || 'no DNS name'}, not ${wanted.join(', ')}`);
  }
  if (!certificate.checkPrivateKey(createPrivateKey(pair.keyPem))) {
    throw new Error('the CA issued a certificate that is not for the key of the order');
  }
  if (certificate.validToDate <= now || certificate.validFromDate > new Date(now.getTime() + 300_000)) {
    throw new Error(`the CA issued a certificate not valid now (${certificate.validFrom} to ${certificate.validTo})`);
  }
  return certificate;
}
