/**
 * Trust material: a per-gateway platform CA (ECDSA P-256)
 * created at first start in <dataDir>/tls, and a server certificate it
 * issues for the configured hostnames, the bind address and loopback. The
 * leaf is re-issued when that name set changes or it nears expiry. An
 * operator may supply their own certificate and key instead.
 */
import { createPrivateKey, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
// @peculiar/x509 resolves its providers through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

// Node's global WebCrypto (typed by lib.dom), shared with @peculiar/x509.
const webcrypto = globalThis.crypto;
x509.cryptoProvider.set(webcrypto);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

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
  now?: Date;
}

export async function ensureTlsMaterial(options: TlsOptions): Promise<TlsMaterial> {
  mkdirSync(options.tlsDir, { recursive: true, mode: 0o700 });
  const ca = await ensureCa(options);
  if (options.operatorCertFile && options.operatorKeyFile) {
    return {
      caPem: ca.pem,
      certPem: readFileSync(options.operatorCertFile, 'utf8'),
      keyPem: readFileSync(options.operatorKeyFile, 'utf8'),
    };
  }
  const names = [...new Set(options.names)].sort();
  const certPath = join(options.tlsDir, 'server.pem');
  const keyPath = join(options.tlsDir, 'server-key.pem');
  const namesPath = join(options.tlsDir, 'server-names.json');
  const now = options.now ?? new Date();
  if (existsSync(certPath) && existsSync(keyPath) && existsSync(namesPath)) {
    const sameNames = readFileSync(namesPath, 'utf8') === JSON.stringify(names);
    const leaf = new x509.X509Certificate(readFileSync(certPath, 'utf8'));
    const fresh = leaf.notAfter.getTime() - now.getTime() > 30 * DAY_MS;
    const sameIssuer =
      leaf.issuer === ca.cert.subject && (await leaf.verify({ publicKey: ca.cert.publicKey, signatureOnly: true }));
    if (sameNames && fresh && sameIssuer) {
      return { caPem: ca.pem, certPem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') };
    }
  }
  const leafKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: `CN=${escapeDn(names.find((n) => isIP(n) === 0) ?? names[0] ?? 'localhost')}`,
    issuer: ca.cert.subject,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 397 * DAY_MS),
    signingAlgorithm: ALG,
    publicKey: leafKeys.publicKey,
    signingKey: ca.key,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension(
        names.map((n) => (isIP(n) ? { type: 'ip' as const, value: n } : { type: 'dns' as const, value: n })),
      ),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
    ],
  });
  const keyPem = await privateKeyPem(leafKeys.privateKey);
  const certPem = `${leaf.toString('pem')}\n${ca.pem}`;
  writeFileSync(keyPath, keyPem, { mode: 0o600 });
  // Certificates are public, but everything under the data dir is private to the gateway's user alike.
  writeFileSync(certPath, certPem, { mode: 0o600 });
  writeFileSync(namesPath, JSON.stringify(names), { mode: 0o600 });
  return { caPem: ca.pem, certPem, keyPem };
}

async function ensureCa(options: TlsOptions): Promise<{ pem: string; cert: x509.X509Certificate; key: CryptoKey }> {
  const caPath = join(options.tlsDir, 'ca.pem');
  const caKeyPath = join(options.tlsDir, 'ca-key.pem');
  if (existsSync(caPath) && existsSync(caKeyPath)) {
    const pem = readFileSync(caPath, 'utf8');
    const key = createPrivateKey(readFileSync(caKeyPath, 'utf8')).toCryptoKey(ALG, false, [
      'sign',
    ]) as unknown as CryptoKey;
    return { pem, cert: new x509.X509Certificate(pem), key };
  }
  const now = options.now ?? new Date();
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${escapeDn(`meshgate platform CA ${options.clusterName}`)}, O=meshgate`,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 3650 * DAY_MS),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pem = cert.toString('pem');
  writeFileSync(caKeyPath, await privateKeyPem(keys.privateKey), { mode: 0o600 });
  writeFileSync(caPath, `${pem}\n`, { mode: 0o600 });
  return { pem: `${pem}\n`, cert, key: keys.privateKey };
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  const body = der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '');
  return `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`;
}

function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f; // positive INTEGER
  return bytes.toString('hex');
}

function escapeDn(value: string): string {
  return value.replace(/([,+"\\<>;=])/g, '\\$1');
}
