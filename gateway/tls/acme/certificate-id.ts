/**
 * The certificate identifier of ACME Renewal Information (RFC 9773 §4.1): base64url of the Authority Key
 * Identifier's keyIdentifier, a dot, base64url of the serial number's DER integer content (with the leading zero
 * that keeps it positive). Loaded with the ACME client only.
 */
import type { X509Certificate } from 'node:crypto';
// @peculiar/x509 resolves its providers through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

export function certificateId(certificate: X509Certificate): string {
  const aki = new x509.X509Certificate(certificate.raw).getExtension(x509.AuthorityKeyIdentifierExtension);
  if (!aki?.keyId) throw new Error('the certificate has no authority key identifier');
  let serial = certificate.serialNumber;
  if (serial.length % 2 === 1) serial = `0${serial}`;
  if (Number.parseInt(serial.slice(0, 2), 16) >= 0x80) serial = `00${serial}`;
  return `${Buffer.from(aki.keyId, 'hex').toString('base64url')}.${Buffer.from(serial, 'hex').toString('base64url')}`;
}
