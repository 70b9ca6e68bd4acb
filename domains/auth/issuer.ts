/**
 * The `iss` of every token this cluster signs, and the `issuer` its OIDC
 * discovery document states (OpenID Connect Discovery 1.0 §4.3: the two must
 * match exactly). It must outlive a restart, or every PAT dies with it:
 *
 * - the configured external URL (or origin) when set: `<url>/api/auth`, so
 *   an operator who moves the public URL moves the issuer on purpose;
 * - else the issuer chosen at this data dir's first start, kept in
 *   `<dataDir>/issuer`: on a fixed HTTPS port the origin derived from the
 *   first hostname and that port; on `httpsPort` 0 (a new port each start)
 *   this cluster's identity, `urn:meshgate:cluster:<uuid>` (a JWT `iss` may be
 *   any StringOrURI, RFC 7519 §4.1.1). A later change of port or hostname
 *   leaves it as it was; discovery's endpoints still follow the live origin.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../gateway/config/schema.ts';
import type { RuntimeInfo } from '../../gateway/module.ts';

const AUTH_PATH = '/api/auth';

/** Where the realm's endpoints are served now: discovery names them under this base. */
export function authBaseUrl(runtime: RuntimeInfo): string {
  return `${runtime.externalUrl()}${AUTH_PATH}`;
}

export function tokenIssuer(config: Readonly<Config>, runtime: RuntimeInfo): () => string {
  if (config.externalUrl !== null || config.origin !== null) return () => authBaseUrl(runtime);
  let issuer: string | null = null;
  // Resolved at first use: the derived origin knows its port only once the listener is bound.
  return () => {
    issuer ??= persistedIssuer(config.dataDir, () => (config.httpsPort !== 0 ? authBaseUrl(runtime) : `urn:meshgate:cluster:${randomUUID()}`));
    return issuer;
  };
}

function persistedIssuer(dataDir: string, firstIssuer: () => string): string {
  const file = join(dataDir, 'issuer');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const issuer = firstIssuer();
  writeFileSync(file, `${issuer}\n`, { mode: 0o600, flag: 'wx' });
  return issuer;
}
