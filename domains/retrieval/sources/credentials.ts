/**
 * The credentials every source reads from the catalog: a property whose
 * value is a secret URN is replaced by the secret's value, revealed through
 * the catalog's SECRETS service at read time. A value is never logged or put
 * in an error; a refusal names the URN as written.
 */
import { ApiError } from '../../../gateway/errors/api-error.ts';
import { parseBoundSecretReference } from '../../catalog/index.ts';
import { RetrievalErrors } from '../errors.ts';

export const SECRET_PREFIX = 'urn:li:dataHubSecret:';

/** The slice of the catalog's SECRETS service a connector uses. */
export interface SecretReader {
  reveal(urn: string): string;
}

/** The fields a user/password credential_override may have (Postgres, HiveServer2). */
export const USER_PASSWORD_FIELDS = ['user', 'username', 'password'] as const;

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

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
