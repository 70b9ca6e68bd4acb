/**
 * Issuing the trust material (tls/material.ts loads this only to issue: at
 * first start, on a name change or near expiry, so a warm start never
 * loads @peculiar/x509 and its dependencies): the platform CA, self-signed,
 * and the server certificate it signs.
 */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
// @peculiar/x509 resolves its providers through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { type CaMaterial, DAY_MS, KEY_ALGORITHM } from './material.ts';

// Node's global WebCrypto (typed by lib.dom), shared with @peculiar/x509.
const webcrypto = globalThis.crypto;
x509.cryptoProvider.set(webcrypto);

export async function issueCa(clusterName: string, now: Date): Promise<CaMaterial & { keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${escapeDn(`meshgate platform CA ${clusterName}`)}, O=meshgate`,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 3650 * DAY_MS),
    signingAlgorithm: KEY_ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { pem: `${cert.toString('pem')}\n`, key: keys.privateKey, keyPem: await privateKeyPem(keys.privateKey) };
}

/** A server certificate for `names` (DNS names and IP addresses), signed by the CA; its PEM carries the CA after it. */
export async function issueServerCertificate(
  ca: CaMaterial,
  names: readonly string[],
  now: Date,
): Promise<{ certPem: string; keyPem: string }> {
  const caCert = new x509.X509Certificate(ca.pem);
  const leafKeys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: `CN=${escapeDn(names.find((n) => isIP(n) === 0) ?? names[0] ?? 'localhost')}`,
    issuer: caCert.subject,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 397 * DAY_MS),
    signingAlgorithm: KEY_ALGORITHM,
    publicKey: leafKeys.publicKey,
    signingKey: ca.key,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension(
        names.map((n) => (isIP(n) ? { type: 'ip' as const, value: n } : { type: 'dns' as const, value: n })),
      ),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  return { certPem: `${leaf.toString('pem')}\n${ca.pem}`, keyPem: await privateKeyPem(leafKeys.privateKey) };
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
