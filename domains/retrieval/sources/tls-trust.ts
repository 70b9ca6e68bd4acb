/**
 * What every source that speaks TLS to its server shares (Postgres, Kafka,
 * HiveServer2): the CA bundle a dataset trusts, read from a property holding
 * PEM text or a catalog secret reference whose value is that PEM, and a
 * failed connection's TLS problem in a few words. The chain is always
 * verified; without a bundle, against the gateway's default CA store.
 */
import { X509Certificate } from 'node:crypto';
import { RetrievalErrors } from '../errors.ts';
import { revealed, type SecretReader } from './credentials.ts';

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

function isCertificate(block: string): boolean {
  try {
    new X509Certificate(block);
    return true;
  } catch {
    return false;
  }
}

/**
 * The certificates of `option`'s PEM bundle, or undefined when the property
 * is unset. A bad value is a 422 `source_options_invalid` naming `option`,
 * before any connection.
 */
export function caBundle(value: unknown, secrets: SecretReader | undefined, option: string): string[] | undefined {
  const unreadable = () => RetrievalErrors.make.source_options_invalid({ option, problem: 'secret not readable' });
  const pem = revealed(value, secrets, unreadable);
  if (pem === undefined) return undefined;
  // Every certificate of a bundle must parse (text between them, such as comments, is allowed):
  // tls.connect would skip one it cannot read, and verification fail later with a vaguer error.
  const blocks = pem.match(PEM_BLOCK);
  const begun = pem.split('-----BEGIN CERTIFICATE-----').length - 1; // a block cut off before its END matches nothing
  if (!blocks || blocks.length !== begun || !blocks.every(isCertificate)) {
    throw RetrievalErrors.make.source_options_invalid({ option, problem: 'not a PEM certificate bundle' });
  }
  return blocks;
}

/** OpenSSL's certificate verification results, as Node names them in an error's `code`. */
const VERIFY_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CRL_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** A failed connection's TLS problem in a few words (never certificate text), or null when it is not TLS's. */
export function tlsProblem(error: unknown): string | null {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (message === 'The server does not support SSL connections') return 'server does not offer tls';
  if (typeof code !== 'string') return null;
  // A server that is not speaking TLS on the port: it closes on the ClientHello.
  if (code === 'ECONNRESET' && typeof message === 'string' && message.includes('secure TLS connection')) {
    return 'tls handshake failed';
  }
  if (VERIFY_CODES.has(code)) return 'tls verification failed';
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return 'tls handshake failed';
  return null;
}
