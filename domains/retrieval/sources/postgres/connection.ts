/**
 * Where a Postgres dataset lives and with which credentials (the dataset's
 * ingestion options `host`, `port`, `database`, `user`, `password`,
 * `schema`). Credentials come from a catalog secret (a property whose value
 * is a secret URN, or `secret_urn` holding `{"user","password"}` JSON or a
 * bare password) or from the job's `credential_override`, which may set the
 * user and password only: the dataset owner, not the caller, decides which
 * server is contacted, and the stored password never goes with a user the
 * caller chose. Values are never logged or put in an error. TLS settings
 * are tls.ts's.
 */
import { RetrievalErrors } from '../../errors.ts';
import { revealed, type SecretReader, USER_PASSWORD_FIELDS } from '../credentials.ts';
import { credentialFields, jsonObject } from '../reader-options.ts';
import type { SourceInput } from '../types.ts';

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

/** `{"user","password"}` (or `username`) JSON fields, else the whole text is a password. */
function credentialsOf(fields: Record<string, unknown> | null, value: string): Partial<PgCredentials> {
  return fields
    ? { user: text(fields.user) ?? text(fields.username), password: text(fields.password) }
    : { password: value };
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
