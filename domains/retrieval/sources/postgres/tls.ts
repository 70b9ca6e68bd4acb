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
import type { ConnectionOptions } from 'node:tls';
import { RetrievalErrors } from '../../errors.ts';
import type { SecretReader } from '../credentials.ts';
import { caBundle } from '../tls-trust.ts';

const MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
type SslMode = (typeof MODES)[number];

/** node-postgres' `ssl`: false, or tls.connect options that always verify the chain. */
export type PgTls = false | (ConnectionOptions & { rejectUnauthorized: true });

function sslMode(value: unknown): SslMode {
  if (value === undefined || value === null || value === '') return 'disable';
  if (MODES.includes(value as SslMode)) return value as SslMode;
  throw RetrievalErrors.make.source_options_invalid({
    option: 'sslmode',
    problem: `sslmode must be one of ${MODES.join(', ')}`,
  });
}

export function pgTls(properties: Readonly<Record<string, unknown>>, secrets: SecretReader | undefined): PgTls {
  const mode = sslMode(properties.sslmode);
  if (mode === 'disable') return false;
  const ca = caBundle(properties.sslrootcert, secrets, 'sslrootcert');
  // The chain is verified by tls.connect (rejectUnauthorized) before checkServerIdentity is asked.
  const names = mode === 'verify-full' ? {} : { checkServerIdentity: () => undefined };
  return { ...(ca ? { ca } : {}), rejectUnauthorized: true, ...names };
}
