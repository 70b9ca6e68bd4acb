/**
 * TLS to PostgreSQL (docs/retrieval.md, "Postgres TLS"): dataset properties
 * `sslmode` and `sslrootcert`, as node-postgres' `ssl` option.
 *
 * - `disable` (default): no TLS.
 * - `require`, `verify-ca`: TLS; the server's certificate chain is verified
 *   against `sslrootcert` (else the gateway's default CA store); the host
 *   name is not checked. Unlike libpq's `require`, the chain is never left
 *   unverified: an unverified TLS connection is open to an active attacker.
 * - `verify-full`: also the host name (or IP address) against the
 *   certificate's names.
 *
 * libpq's `allow` and `prefer` (clear text whenever the server lacks TLS)
 * are refused. `sslrootcert` is PEM text (one or more CA certificates) or a
 * catalog secret URN whose value is that PEM. A bad value is a 422 before any connection.
 */
import { X509Certificate } from 'node:crypto';
import type { ConnectionOptions } from 'node:tls';
import { RetrievalErrors } from '../errors.ts';
import { revealed, type SecretReader } from './pg-connection.ts';

const MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
type SslMode = (typeof MODES)[number];

/** node-postgres' `ssl`: false, or tls.connect options that always verify the chain. */
export type PgTls = false | (ConnectionOptions & { rejectUnauthorized: true });

function sslMode(value: unknown): SslMode {
  if (value === undefined || value === null || value === '') return 'disable';
  if (MODES.includes(value as SslMode)) return value as SslMode;
  throw RetrievalErrors.make.source_options_invalid({ option: 'sslmode', problem: `sslmode must be one of ${MODES.join(', ')}` });
}

function rootCertificates(value: unknown, secrets: SecretReader | undefined): string[] | undefined {
  const unreadable = () => RetrievalErrors.make.source_options_invalid({ option: 'sslrootcert', problem: 'secret not readable' });
  const pem = revealed(value, secrets, unreadable);
  if (pem === undefined) return undefined;
  // Every certificate of a bundle must parse (text between them, such as comments, is allowed):
  // tls.connect would skip one it cannot read, and verification fail later with a vaguer error.
  const blocks = pem.match(PEM_BLOCK);
  const begun = pem.split('-----BEGIN CERTIFICATE-----').length - 1; // a block cut off before its END matches nothing
  if (!blocks || blocks.length !== begun || !blocks.every(isCertificate)) {
    throw RetrievalErrors.make.source_options_invalid({ option: 'sslrootcert', problem: 'not a PEM certificate bundle' });
  }
  return blocks;
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

function isCertificate(block: string): boolean {
  try {
    new X509Certificate(block);
    return true;
  } catch {
    return false;
  }
}

export function pgTls(properties: Readonly<Record<string, unknown>>, secrets: SecretReader | undefined): PgTls {
  const mode = sslMode(properties.sslmode);
  if (mode === 'disable') return false;
  const ca = rootCertificates(properties.sslrootcert, secrets);
  // The chain is verified by tls.connect (rejectUnauthorized) before checkServerIdentity is asked.
  const names = mode === 'verify-full' ? {} : { checkServerIdentity: () => undefined };
  return { ...(ca ? { ca } : {}), rejectUnauthorized: true, ...names };
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
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (message === 'The server does not support SSL connections') return 'server does not offer tls';
  if (typeof code !== 'string') return null;
  if (VERIFY_CODES.has(code)) return 'tls verification failed';
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return 'tls handshake failed';
  return null;
}
