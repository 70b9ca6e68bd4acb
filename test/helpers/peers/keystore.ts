/**
 * A PKCS#12 key store for a Java peer that serves TLS (Kafka, HiveServer2):
 * Java reads neither a PEM key pair (HiveServer2) nor an unencrypted PEM
 * key file (Kafka), so the certificate and key made by the gateway's own
 * TLS material code are packed with `openssl pkcs12 -export` into the
 * peer's folder, under a random password.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A server certificate (its chain, leaf first) and its private key, both PEM. */
export interface ServerTls {
  certPem: string;
  keyPem: string;
}

export interface KeyStore {
  path: string;
  password: string;
}

export async function pkcs12KeyStore(dir: string, tls: ServerTls): Promise<KeyStore> {
  const pem = join(dir, 'server-tls.pem');
  writeFileSync(pem, `${tls.keyPem}\n${tls.certPem}`, { mode: 0o600 });
  const path = join(dir, 'keystore.p12');
  const password = randomBytes(12).toString('hex');
  // The password goes through the environment, not the command line other users can read.
  const args = ['pkcs12', '-export', '-in', pem, '-out', path, '-name', 'server', '-passout', 'env:KEYSTORE_PASSWORD'];
  await execFileAsync('openssl', args, { env: { ...process.env, KEYSTORE_PASSWORD: password } }).catch((error) => {
    throw new Error(`test peer keystore: openssl pkcs12 failed: ${error.stderr || error.message}`);
  });
  return { path, password };
}
