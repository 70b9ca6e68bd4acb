/**
 * The `iss` of every token this cluster signs, and the `issuer` its OIDC
 * discovery document states (OpenID Connect Discovery 1.0 §4.3: the two must
 * match exactly). It must outlive a restart, or every PAT dies with it:
 *
 * - the configured external URL (or origin) when set: `<url>/api/auth`;
 * - else, on a fixed HTTPS port, the origin derived from the first
 *   hostname and that port — the same URL across restarts;
 * - else (`httpsPort` 0, a new port each start) no URL is stable, so the
 *   issuer is this cluster's identity, `urn:meshgate:cluster:<uuid>`
 *   (a JWT `iss` may be any StringOrURI, RFC 7519 §4.1.1), created once
 *   and kept in `<dataDir>/cluster-id`. Discovery's endpoints still point
 *   at the live origin; only the name is decoupled from the port.
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
  if (config.externalUrl !== null || config.origin !== null || config.httpsPort !== 0) return () => authBaseUrl(runtime);
  const issuer = `urn:meshgate:cluster:${clusterId(config.dataDir)}`;
  return () => issuer;
}

function clusterId(dataDir: string): string {
  const file = join(dataDir, 'cluster-id');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const id = randomUUID();
  writeFileSync(file, `${id}\n`, { mode: 0o600, flag: 'wx' });
  return id;
}
