/**
 * Trust material: a per-gateway platform CA (ECDSA P-256)
 * created at first start in <dataDir>/tls, and a server certificate it
 * issues for the configured hostnames, the bind address and loopback. The
 * leaf is re-issued when that name set changes or it nears expiry. An
 * operator may supply their own certificate and key instead.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readOperatorFiles } from './operator-files.ts';

export const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
export const DAY_MS = 86_400_000;

export interface TlsMaterial {
  caPem: string;
  certPem: string;
  keyPem: string;
}

export interface TlsOptions {
  tlsDir: string;
  names: readonly string[];
  clusterName: string;
  operatorCertFile?: string | null;
  operatorKeyFile?: string | null;
  /** Told what is served though wrong (an expired operator certificate). */
  warn?: (message: string) => void;
  now?: Date;
}

/** The platform CA: its certificate and its signing key. */
export interface CaMaterial {
  pem: string;
  key: CryptoKey;
}

/**
 * The material in place is checked with Node's own X509Certificate: a warm start issues nothing, so it never loads
 * the issuing code (tls/issue.ts).
 */
export async function ensureTlsMaterial(options: TlsOptions): Promise<TlsMaterial> {
  mkdirSync(options.tlsDir, { recursive: true, mode: 0o700 });
  const ca = await ensureCa(options);
  if (options.operatorCertFile && options.operatorKeyFile) {
    const files = { certFile: options.operatorCertFile, keyFile: options.operatorKeyFile };
    const { certPem, keyPem } = readOperatorFiles(files, options.warn ?? (() => {}), options.now);
    return { caPem: ca.pem, certPem, keyPem };
  }
  const names = [...new Set(options.names)].sort();
  const certPath = join(options.tlsDir, 'server.pem');
  const keyPath = join(options.tlsDir, 'server-key.pem');
  const namesPath = join(options.tlsDir, 'server-names.json');
  const now = options.now ?? new Date();
  if (existsSync(certPath) && existsSync(keyPath) && existsSync(namesPath)) {
    const sameNames = readFileSync(namesPath, 'utf8') === JSON.stringify(names);
    const leaf = new X509Certificate(readFileSync(certPath, 'utf8'));
    const caCert = new X509Certificate(ca.pem);
    const fresh = leaf.validToDate.getTime() - now.getTime() > 30 * DAY_MS;
    // Issued by this CA: its name and key identifiers match (checkIssued), and its signature verifies.
    const sameIssuer = leaf.checkIssued(caCert) && leaf.verify(caCert.publicKey);
    if (sameNames && fresh && sameIssuer) {
      return { caPem: ca.pem, certPem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') };
    }
  }
  const { issueServerCertificate } = await import('./issue.ts');
  const { certPem, keyPem } = await issueServerCertificate(ca, names, now);
  writeFileSync(keyPath, keyPem, { mode: 0o600 });
  // Certificates are public, but everything under the data dir is private to the gateway's user alike.
  writeFileSync(certPath, certPem, { mode: 0o600 });
  writeFileSync(namesPath, JSON.stringify(names), { mode: 0o600 });
  return { caPem: ca.pem, certPem, keyPem };
}

async function ensureCa(options: TlsOptions): Promise<CaMaterial> {
  const caPath = join(options.tlsDir, 'ca.pem');
  const caKeyPath = join(options.tlsDir, 'ca-key.pem');
  if (existsSync(caPath) && existsSync(caKeyPath)) {
    const pem = readFileSync(caPath, 'utf8');
    const key = createPrivateKey(readFileSync(caKeyPath, 'utf8')).toCryptoKey(KEY_ALGORITHM, false, [
      'sign',
    ]) as unknown as CryptoKey;
    return { pem, key };
  }
  const { issueCa } = await import('./issue.ts');
  const { pem, key, keyPem } = await issueCa(options.clusterName, options.now ?? new Date());
  writeFileSync(caKeyPath, keyPem, { mode: 0o600 });
  writeFileSync(caPath, pem, { mode: 0o600 });
  return { pem, key };
}
