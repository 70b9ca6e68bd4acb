/**
 * What ACME keeps in the data dir, under tls/acme/, every file 0600 and written whole (a temporary file renamed
 * over the old one, so a reader never sees half of one): the account key, the issued certificate chain and its
 * key, and the status `meshgate cert status` reads (names, issuer, not-after, next renewal, last error).
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerKeyPair } from '../serving-certificate.ts';

export interface AcmeStatus {
  readonly names: readonly string[];
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
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, path);
}

function readIfThere(path: string): string | null {
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
}

export class AcmeStore {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = acmeDir(dataDir);
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
  certificate(): ServerKeyPair | null {
    const certPem = readIfThere(join(this.dir, 'certificate.pem'));
    const keyPem = readIfThere(join(this.dir, 'certificate-key.pem'));
    return certPem !== null && keyPem !== null ? { certPem, keyPem } : null;
  }

  /** The key first: a crash between the two writes leaves a pair that fails its check, and is ordered again. */
  saveCertificate(pair: ServerKeyPair): void {
    this.#ensureDir();
    writeWhole(join(this.dir, 'certificate-key.pem'), pair.keyPem);
    writeWhole(join(this.dir, 'certificate.pem'), pair.certPem);
  }

  status(): AcmeStatus {
    const text = readIfThere(join(this.dir, 'status.json'));
    return text === null ? NO_STATUS : { ...NO_STATUS, ...(JSON.parse(text) as Partial<AcmeStatus>) };
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
