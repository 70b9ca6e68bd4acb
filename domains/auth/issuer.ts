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
 *
 * The file is written whole or not at all (a temporary file, fsync, then a
 * hard link to the final name, which also never replaces one a concurrent
 * start made first), and an existing file that holds no valid issuer stops
 * the start: a crash must not leave an empty file that silently becomes a
 * new issuer and orphans every PAT.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from '../../gateway/config/schema.ts';
import type { RuntimeInfo } from '../../gateway/module.ts';

const AUTH_PATH = '/api/auth';

/** Where the realm's endpoints are served now: discovery names them under this base. */
export function authBaseUrl(runtime: RuntimeInfo): string {
  return `${runtime.externalUrl()}${AUTH_PATH}`;
}

export function tokenIssuer(config: Readonly<Config>, runtime: RuntimeInfo): () => string {
  if (config.externalUrl !== null || config.origin !== null) return () => authBaseUrl(runtime);
  const file = join(config.dataDir, 'issuer');
  // Read or chosen now, at start (the listeners are bound, so the derived origin knows its port): a damaged file
  // refuses the start instead of the first login, and on PostgreSQL the choice is among the identity files the
  // starting node publishes to the other nodes (app/cluster-identity.ts).
  const issuer = existsSync(file)
    ? readIssuer(file)
    : persistIssuer(file, config.httpsPort !== 0 ? authBaseUrl(runtime) : `urn:meshgate:cluster:${randomUUID()}`);
  return () => issuer;
}

const CLUSTER_URN = /^urn:meshgate:cluster:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function readIssuer(file: string): string {
  const issuer = readFileSync(file, 'utf8').trim();
  if (CLUSTER_URN.test(issuer) || (URL.canParse(issuer) && new URL(issuer).protocol === 'https:')) return issuer;
  throw new Error(
    `${file} holds no token issuer (expected an https URL or urn:meshgate:cluster:<uuid>): restore it from a backup, ` +
      'or remove it to choose a new issuer, which makes every PAT signed so far invalid',
  );
}

function persistIssuer(file: string, issuer: string): string {
  const temporary = `${file}.${process.pid}.${randomUUID()}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${issuer}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, file);
  } catch (error) {
    // Another start chose first: its issuer is the one.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readIssuer(file);
    throw error;
  } finally {
    unlinkSync(temporary);
  }
  const dir = openSync(dirname(file), 'r');
  try {
    fsyncSync(dir); // the new name itself survives a crash
  } finally {
    closeSync(dir);
  }
  return issuer;
}
