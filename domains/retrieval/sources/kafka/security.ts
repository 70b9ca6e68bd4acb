/**
 * How the gateway reaches a Kafka cluster that runs with TLS and SASL:
 * dataset properties named as Kafka's own client settings
 * (`security.protocol`, `sasl.mechanism`, librdkafka's `ssl.ca.pem`), never
 * a reader's option (KAFKA_READER_OPTIONS holds none of them).
 *
 * - `security_protocol`: `PLAINTEXT` (default), `SSL` or `SASL_SSL`. Kafka's
 *   `SASL_PLAINTEXT` is refused: stored credentials only travel over TLS.
 * - `ssl_ca_pem`: the CA bundle the brokers' certificates must chain to, PEM
 *   text or a catalog secret reference (else the gateway's default CA
 *   store). The chain and the broker's name are always verified, as Kafka's
 *   clients do by default since 2.0 (`ssl.endpoint.identification.algorithm=https`).
 * - `sasl_mechanism`: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512` (RFC 4616,
 *   RFC 5802/7677), required with `SASL_SSL`.
 * - `sasl_username` (text or a secret reference) and `sasl_password` (a
 *   secret reference only: properties are shown to every viewer of the
 *   dataset). A job's `credential_override` `{"username","password"}`
 *   replaces them; a user it names goes with its password, never the stored one.
 *   Without SASL a job's override is refused (422), not ignored.
 */
import type { ConnectionOptions } from 'node:tls';
import type { SASLOptions } from '@platformatic/kafka';
import { RetrievalErrors } from '../../errors.ts';
import { revealed, SECRET_PREFIX, type SecretReader, USER_PASSWORD_FIELDS } from '../credentials.ts';
import { credentialFields } from '../reader-options.ts';
import { caBundle, tlsProblem } from '../tls-trust.ts';
import type { SourceInput } from '../types.ts';

/** The connection settings of every Kafka client a read opens (Consumer, Admin). */
export interface KafkaSecurity {
  readonly tls?: ConnectionOptions & { rejectUnauthorized: true };
  readonly sasl?: SASLOptions;
}

const PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_SSL'] as const;
const MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
type Mechanism = (typeof MECHANISMS)[number];
const SASL_KEYS = ['sasl_mechanism', 'sasl_username', 'sasl_password'];

const invalid = (option: string, problem: string) => RetrievalErrors.make.source_options_invalid({ option, problem });
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

function protocolOf(value: unknown): (typeof PROTOCOLS)[number] {
  if (value === undefined || value === null) return 'PLAINTEXT';
  if (value === 'SASL_PLAINTEXT') {
    throw invalid('security_protocol', 'SASL credentials are sent over TLS only: use SASL_SSL');
  }
  if (!PROTOCOLS.includes(value as never)) throw invalid('security_protocol', `one of ${PROTOCOLS.join(', ')}`);
  return value as (typeof PROTOCOLS)[number];
}

type Override = Readonly<Record<string, unknown>> | null;

/** A job's credential_override: a JSON object with user/username/password only, or none. */
function overrideOf(input: SourceInput): Override {
  if (!input.credentialOverride) return null;
  const fields = credentialFields(input.credentialOverride, USER_PASSWORD_FIELDS, 'kafka');
  if (!fields) {
    const problem = 'credential_override is not {"username","password"} JSON';
    throw RetrievalErrors.make.source_credentials_missing({ problem });
  }
  return fields;
}

function saslOf(p: SourceInput['properties'], override: Override, secrets: SecretReader | undefined): SASLOptions {
  const mechanism = p.sasl_mechanism;
  if (!MECHANISMS.includes(mechanism as Mechanism)) throw invalid('sasl_mechanism', `one of ${MECHANISMS.join(', ')}`);
  const stored = text(p.sasl_password);
  if (stored !== undefined && !stored.startsWith(SECRET_PREFIX)) {
    throw invalid('sasl_password', 'a catalog secret reference');
  }
  const overrideUser = text(override?.username) ?? text(override?.user);
  const username = overrideUser ?? revealed(p.sasl_username, secrets);
  // The stored password never goes with a user the caller chose.
  const overrides = override !== null && (overrideUser !== undefined || text(override.password) !== undefined);
  const password = overrides ? text(override.password) : revealed(stored, secrets);
  if (!username || !password) {
    throw RetrievalErrors.make.source_credentials_missing({ problem: 'SASL needs a username and a password' });
  }
  return { mechanism: mechanism as Mechanism, username, password };
}

/** The dataset's TLS and SASL settings; a bad value is a 422 naming the property, before any connection. */
export function kafkaSecurity(input: SourceInput, secrets: SecretReader | undefined): KafkaSecurity {
  const p = input.properties;
  const override = overrideOf(input);
  const protocol = protocolOf(p.security_protocol);
  // A CA or credentials the protocol would silently not use: the owner meant another protocol.
  const unused = [...(protocol === 'PLAINTEXT' ? ['ssl_ca_pem'] : []), ...(protocol === 'SASL_SSL' ? [] : SASL_KEYS)];
  const stray = unused.find((key) => p[key] !== undefined);
  if (stray) throw invalid(stray, `not used with security_protocol ${protocol}`);
  // Only SASL takes credentials: without it an override would be silently unused, so it is refused.
  if (override !== null && protocol !== 'SASL_SSL')
    throw RetrievalErrors.make.credential_override_not_accepted({ platform: input.platform });
  if (protocol === 'PLAINTEXT') return {};
  const ca = caBundle(p.ssl_ca_pem, secrets, 'ssl_ca_pem');
  // Explicit, so NODE_TLS_REJECT_UNAUTHORIZED in the gateway's environment cannot turn verification off.
  const tls = { ...(ca ? { ca } : {}), rejectUnauthorized: true as const };
  return protocol === 'SASL_SSL' ? { tls, sasl: saslOf(p, override, secrets) } : { tls };
}

/** The error and everything it wraps: the client nests causes (`cause`) and retries (`errors`). */
function* chain(error: unknown, depth = 0): Generator<object> {
  if (!error || typeof error !== 'object' || depth > 8) return;
  yield error;
  yield* chain((error as { cause?: unknown }).cause, depth + 1);
  const { errors } = error as { errors?: unknown };
  if (Array.isArray(errors)) for (const inner of errors) yield* chain(inner, depth + 1);
}

/** A security failure of a Kafka client call as the job's ApiError, or null when it is something else. */
export function kafkaSecurityError(error: unknown): Error | null {
  for (const link of chain(error)) {
    const { code, message } = link as { code?: unknown; message?: unknown };
    if (code === 'PLT_KFK_AUTHENTICATION') {
      return RetrievalErrors.make.source_auth_failed({ problem: 'sasl authentication failed' });
    }
    // The client's answer when a clear-text connection gets TLS records back.
    if (code === 'PLT_KFK_USER' && message === 'Broker requires TLS.') {
      return RetrievalErrors.make.source_tls_failed({ problem: 'the broker requires tls (security_protocol)' });
    }
    const tls = tlsProblem(link);
    if (tls) return RetrievalErrors.make.source_tls_failed({ problem: tls });
  }
  return null;
}
