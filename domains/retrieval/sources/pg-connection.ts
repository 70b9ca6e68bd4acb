/**
 * Where a Postgres dataset lives and with which credentials (the dataset's
 * ingestion options `host`, `port`, `database`, `user`, `password`,
 * `schema`). Credentials come from a catalog secret (a property whose value
 * is a secret URN, or `secret_urn` holding `{"user","password"}` JSON or a
 * bare password) or from the job's `credential_override`, which may set the
 * user and password only: the dataset owner, not the caller, decides which
 * server is contacted, and the stored password never goes with a user the
 * caller chose. Values are never logged or put in an error. TLS settings
 * are pg-tls.ts's.
 */
import { ApiError } from '../../../gateway/errors/api-error.ts';
import { parseBoundSecretReference } from '../../catalog/index.ts';
import { RetrievalErrors } from '../errors.ts';
import { credentialFields, jsonObject } from './reader-options.ts';
import type { SourceInput } from './types.ts';

export const SECRET_PREFIX = 'urn:li:dataHubSecret:';

/** The slice of the catalog's SECRETS service a connector uses. */
export interface SecretReader {
  reveal(urn: string): string;
}

export interface PgTarget {
  readonly connection: { host: string; port: number; database: string };
  readonly schema: string;
  readonly table: string;
}

export interface PgCredentials {
  user: string;
  password: string | undefined;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

export function pgTarget(input: SourceInput): PgTarget {
  const p = input.properties;
  const host = text(p.host);
  if (!host) throw RetrievalErrors.make.dataset_location_missing();
  const port = Number(p.port ?? 5432);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw RetrievalErrors.make.dataset_location_missing();
  return {
    connection: { host, port, database: text(p.database) ?? text(p.dbname) ?? 'postgres' },
    schema: text(p.schema) ?? 'public',
    table: text(p.table) ?? input.name,
  };
}

/** The fields a user/password credential_override may have (Postgres, HiveServer2). */
export const USER_PASSWORD_FIELDS = ['user', 'username', 'password'] as const;

/** `{"user","password"}` (or `username`) JSON fields, else the whole text is a password. */
function credentialsOf(fields: Record<string, unknown> | null, value: string): Partial<PgCredentials> {
  return fields
    ? { user: text(fields.user) ?? text(fields.username), password: text(fields.password) }
    : { password: value };
}

/** The catalog's own refusals of a use: they already say the right thing (409, 500) and name the URN only. */
const CATALOG_REFUSALS = new Set(['secret_unavailable', 'secret_unreadable']);

const notReadable = (urn: string) =>
  RetrievalErrors.make.source_credentials_missing({ problem: 'secret not readable', secret_urn: urn });

/**
 * A bound secret reference's value. A secret deleted or no longer usable between the job's creation and
 * this read stays the catalog's `secret_unavailable` (so a client can tell it from bad options), and any
 * refusal names the URN as written, never the bound form with the secret's internal id.
 */
export function revealSecret(
  secrets: SecretReader | undefined,
  reference: string,
  refuse: (urn: string) => Error = notReadable,
): string {
  const urn = parseBoundSecretReference(reference)?.reference ?? reference;
  if (!secrets) throw refuse(urn);
  try {
    return secrets.reveal(reference);
  } catch (error) {
    if (error instanceof ApiError && CATALOG_REFUSALS.has(error.reason)) throw error;
    throw refuse(urn);
  }
}

/** A property's text, or, when it is a secret URN, the secret's value. */
export function revealed(
  value: unknown,
  secrets: SecretReader | undefined,
  refuse?: (urn: string) => Error,
): string | undefined {
  const raw = text(value);
  return raw?.startsWith(SECRET_PREFIX) ? revealSecret(secrets, raw, refuse) : raw;
}

export function pgCredentials(input: SourceInput, secrets: SecretReader | undefined): PgCredentials {
  const p = input.properties;
  const secret = text(p.secret_urn) ? (revealed(p.secret_urn, secrets) as string) : undefined;
  const fromSecret = secret ? credentialsOf(jsonObject(secret), secret) : {};
  const override = input.credentialOverride;
  const fromOverride = override
    ? credentialsOf(credentialFields(override, USER_PASSWORD_FIELDS, 'postgres'), override)
    : null;
  const user = fromOverride?.user ?? fromSecret.user ?? revealed(p.user ?? p.username, secrets);
  // With an override, its password or none: the stored password never goes with a user the caller chose.
  const password = fromOverride ? fromOverride.password : (fromSecret.password ?? revealed(p.password, secrets));
  if (!user) throw RetrievalErrors.make.source_credentials_missing({ problem: 'no user' });
  return { user, password };
}
