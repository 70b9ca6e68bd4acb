/**
 * One ACME order (RFC 8555 §7.4) through acme-client, the maintained client that signs every request (JWS) and
 * follows the CA's retries: the account (found or created with the stored key, with external account binding when
 * configured), an order for exactly the configured names, one challenge answered per authorization (TLS-ALPN-01,
 * RFC 8737, or HTTP-01, RFC 8555 §8.3, in the configured preference), a fresh P-256 key and its CSR, the
 * certificate. What the CA hands back is checked against the order before anyone serves it (store.ts checkIssued).
 * The renewal window comes from ACME Renewal Information (RFC 9773) when the CA offers it.
 */
import type { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import type { Config } from '../../config/schema.ts';
import type { ServerKeyPair } from '../serving-certificate.ts';
import { certificateId } from './certificate-id.ts';
import { explained, withoutAnswer } from './reach.ts';
import { checkIssued } from './store.ts';

type AcmeSettings = Config['tls']['acme'];
type AcmeModule = typeof import('acme-client');
type AcmeClient = InstanceType<AcmeModule['Client']>;

/** One request to the CA: its answer, or the order fails and the renewal loop's backoff takes over. */
const REQUEST_TIMEOUT_MS = 30_000;

/** A challenge being answered: what the HTTP-01 listener or the HTTPS listener must serve until it is withdrawn. */
export type PendingChallenge =
  | { readonly type: 'http-01'; readonly name: string; readonly token: string; readonly keyAuthorization: string }
  | {
      readonly type: 'tls-alpn-01';
      readonly name: string;
      readonly keyAuthorization: string;
      readonly pair: ServerKeyPair;
    };

export interface ChallengeResponder {
  /**
   * Resolves once every process that serves the challenge's port answers it. `signal` is the order's: once it aborts
   * (the order's deadline, a stopping gateway) the order is abandoned, and a responder shared with other nodes
   * publishes nothing more for it.
   */
  present(challenge: PendingChallenge, signal?: AbortSignal): Promise<void>;
  withdraw(challenge: PendingChallenge, signal?: AbortSignal): Promise<void>;
}

/** RFC 9773 §4.2: the window the CA suggests renewing in. */
export interface RenewalWindow {
  readonly start: Date;
  readonly end: Date;
}

export interface AcmeSession {
  /** Checks `signal` between steps: an order past its deadline, or of a stopping gateway, goes no further. */
  order(names: readonly string[], replaces: X509Certificate | null, signal: AbortSignal): Promise<ServerKeyPair>;
  /** The CA's suggested window for this certificate, or null when its directory offers no renewalInfo. */
  renewalWindow(certificate: X509Certificate): Promise<RenewalWindow | null>;
}

/** The acme-client module, loaded on first use: a gateway without ACME never loads it. */
export async function openAcmeSession(
  settings: AcmeSettings,
  accountKeyPem: string,
  responder: ChallengeResponder,
): Promise<AcmeSession> {
  const acme = (await import('acme-client')).default;
  const caPem = settings.directoryCaFile === null ? null : readFileSync(settings.directoryCaFile, 'utf8');
  if (caPem !== null) {
    // acme-client sends every request through its one axios instance; the CA file is the trust for all of them.
    acme.axios.defaults.httpsAgent = new Agent({ ca: caPem });
  }
  // A CA that is away fails the order soon, and the renewal loop's backoff takes over (its default would retry each
  // request five times over 75 s); a Retry-After the CA sends is still followed.
  const defaults = acme.axios.defaults as unknown as { acmeSettings: Record<string, number> };
  Object.assign(defaults.acmeSettings, { retryMaxAttempts: 2, retryDefaultDelay: 1 });
  // axios waits forever by default: a CA that accepts the connection and never answers would hold the order.
  acme.axios.defaults.timeout = REQUEST_TIMEOUT_MS;
  const binding = settings.externalAccountBinding;
  const client = new acme.Client({
    directoryUrl: settings.directoryUrl as string,
    accountKey: accountKeyPem,
    // Polling a challenge or order being processed: from 1 s, not 5 s (RFC 8555 §7.5.1 leaves the pace to the client).
    backoffMin: 1000,
    backoffMax: 10_000,
    ...(binding
      ? { externalAccountBinding: { kid: binding.keyId, hmacKey: readFileSync(binding.hmacKeyFile, 'utf8').trim() } }
      : {}),
  });
  const lastProblem = problemTypes(client);
  let account: Promise<unknown> | null = null;
  const ensureAccount = () => {
    // RFC 8555 §7.3.1: the account of this key when the CA knows it (acme-client's plain create would then send an
    // update the CA may refuse as empty), else a new one.
    const contact = settings.contact.length ? { contact: settings.contact } : {};
    account ??= client
      .createAccount({ onlyReturnExisting: true })
      .catch(() => client.createAccount({ termsOfServiceAgreed: true, ...contact }))
      .catch((error: unknown) => {
        account = null;
        // A CA that binds accounts (RFC 8555 §7.3.4) answers a wrong key id or MAC key with a problem of its own
        // words, of one of the types RFC 8555 §7.3.4 and §6.7 name for it: say which setting it is about. Any other
        // refusal (a contact, a rate limit, the CA's own trouble) is passed on as the CA said it.
        if (binding && !withoutAnswer(error) && BINDING_PROBLEMS.has(lastProblem() ?? '')) {
          throw new Error(
            `the CA refused the account's external account binding (key id ${binding.keyId}; ` +
              `tls.acme.externalAccountBinding): ${(error as Error).message}`,
          );
        }
        throw error;
      });
    return account;
  };
  const directoryUrl = settings.directoryUrl as string;
  const named = async (error: unknown): Promise<never> => {
    throw await explained(error, directoryUrl, caPem);
  };
  return {
    async order(names, replaces, signal) {
      try {
        await ensureAccount();
        return await orderOnce(acme, client, { settings, responder, signal }, names, replaces);
      } catch (error) {
        return named(error);
      }
    },
    renewalWindow: (certificate) => renewalWindow(client, certificate).catch(named),
  };
}

/** The problem types (RFC 8555 §6.7) a CA answers a binding it does not accept with. */
const BINDING_PROBLEMS = new Set(
  ['unauthorized', 'malformed', 'externalAccountRequired'].map((type) => `urn:ietf:params:acme:error:${type}`),
);

/**
 * The type of the last problem document (RFC 8555 §6.7) the CA answered this client with: acme-client keeps only the
 * detail in the errors it throws, so its signed requests are observed here.
 */
function problemTypes(client: AcmeClient): () => string | null {
  type Signed = (...args: unknown[]) => Promise<{ data?: unknown }>;
  const http = (client as unknown as { http: { signedRequest: Signed } }).http;
  const signedRequest = http.signedRequest.bind(http);
  let last: string | null = null;
  http.signedRequest = async (...args) => {
    const response = await signedRequest(...args);
    const type = (response.data as { type?: unknown } | undefined)?.type;
    last = typeof type === 'string' && type.startsWith('urn:ietf:params:acme:error:') ? type : null;
    return response;
  };
  return () => last;
}

/** The account key: P-256, as the certificate keys. */
export async function createAccountKey(): Promise<string> {
  const acme = (await import('acme-client')).default;
  return (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
}

async function orderOnce(
  acme: AcmeModule,
  client: AcmeClient,
  { settings, responder, signal }: { settings: AcmeSettings; responder: ChallengeResponder; signal: AbortSignal },
  names: readonly string[],
  replaces: X509Certificate | null,
): Promise<ServerKeyPair> {
  signal.throwIfAborted();
  const order = await client.createOrder({
    identifiers: names.map((value) => ({ type: 'dns', value })),
    ...(settings.profile ? { profile: settings.profile } : {}),
    ...(replaces ? { replaces: certificateId(replaces) } : {}),
  } as Parameters<AcmeClient['createOrder']>[0]);
  const authorizations = await client.getAuthorizations(order);
  for (const authorization of authorizations) {
    signal.throwIfAborted();
    if (authorization.status === 'valid') continue;
    const challenge = settings.challenges
      .map((type) => authorization.challenges.find((c) => c.type === type))
      .find((c) => c !== undefined);
    if (!challenge) {
      throw new Error(
        `the CA offers no ${settings.challenges.join(' or ')} challenge for ${authorization.identifier.value}`,
      );
    }
    const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
    const name = authorization.identifier.value;
    const pending: PendingChallenge =
      challenge.type === 'http-01'
        ? { type: 'http-01', name, token: (challenge as { token: string }).token, keyAuthorization }
        : { type: 'tls-alpn-01', name, keyAuthorization, pair: await alpnPair(acme, authorization, keyAuthorization) };
    try {
      // Inside the try: a present that fails half-way (some processes answer) is withdrawn as well.
      await responder.present(pending, signal);
      await client.completeChallenge(challenge);
      await client.waitForValidStatus(challenge);
    } finally {
      await responder.withdraw(pending, signal);
    }
  }
  signal.throwIfAborted();
  const [keyBuffer, csr] = await acme.crypto.createCsr(
    { commonName: names[0], altNames: [...names] },
    await acme.crypto.createPrivateEcdsaKey('P-256'),
  );
  const finalized = await client.finalizeOrder(order, csr);
  const pair = { certPem: await client.getCertificate(finalized), keyPem: keyBuffer.toString() };
  checkIssued(pair, names, new Date());
  return pair;
}

/** The TLS-ALPN-01 certificate (RFC 8737 §3) for a challenge another node of the cluster is answering. */
export async function alpnChallengeFor(name: string, keyAuthorization: string): Promise<PendingChallenge> {
  const acme = (await import('acme-client')).default;
  const authorization = { identifier: { type: 'dns', value: name } } as Parameters<
    AcmeModule['crypto']['createAlpnCertificate']
  >[0];
  return { type: 'tls-alpn-01', name, keyAuthorization, pair: await alpnPair(acme, authorization, keyAuthorization) };
}

async function alpnPair(
  acme: AcmeModule,
  authorization: Parameters<AcmeModule['crypto']['createAlpnCertificate']>[0],
  keyAuthorization: string,
): Promise<ServerKeyPair> {
  const [key, cert] = await acme.crypto.createAlpnCertificate(authorization, keyAuthorization);
  return { keyPem: key.toString(), certPem: cert.toString() };
}

async function renewalWindow(client: AcmeClient, certificate: X509Certificate): Promise<RenewalWindow | null> {
  const http = (client as unknown as { http: { getDirectory(): Promise<Record<string, unknown>> } }).http;
  const base = (await http.getDirectory()).renewalInfo;
  if (typeof base !== 'string') return null;
  const acme = (await import('acme-client')).default;
  const response = await acme.axios.get(`${base.replace(/\/$/, '')}/${certificateId(certificate)}`, {
    validateStatus: (status) => status === 200,
  });
  const window = (response.data as { suggestedWindow?: { start?: string; end?: string } }).suggestedWindow;
  const start = new Date(window?.start ?? Number.NaN);
  const end = new Date(window?.end ?? Number.NaN);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()) || end < start) return null;
  return { start, end };
}
