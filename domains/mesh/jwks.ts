/**
 * Validation of the caller's token a mesh request carries (receiver
 * side, after the signature verified) and of shared-realm tokens at egress: jose against a
 * remote JWKS fetched over TLS that trusts only the CA given (the record's
 * shared_ca_pem, or the peer CA stored at pairing), algorithms allow-listed,
 * exp required. Verified tokens are cached until they expire: a jose verify
 * costs 120–250 µs, a map hit well under 1 µs.
 */
import { createRemoteJWKSet, customFetch, type JWTPayload, errors as joseErrors, jwtVerify } from 'jose';
import { Agent, type Dispatcher, fetch } from 'undici';
import { VerifiedTokenCache } from '../auth/index.ts';

/** Asymmetric algorithms only: no `none`, no HS* (key confusion with a public JWK). */
export const ALLOWED_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
];

export interface RealmSpec {
  /** Expected `iss`; null skips the claim (a realm pinned by its JWKS location and CA alone). */
  issuer: string | null;
  /** Where the keys are (resolved once per issuer, see sharedJwksUrl). */
  jwksUrl: string;
  /** How to reach it: a dispatcher trusting the right CA. */
  dispatcher: Dispatcher;
}

/** Why a token failed, as the `error` of peer_jwt_validation_failed (e.g. "kid not present"). */
export type TokenFailure = { kind: 'invalid'; error: string } | { kind: 'jwks'; error: string };

export class TokenFailed extends Error {
  constructor(readonly failure: TokenFailure) {
    super(failure.error);
    this.name = 'TokenFailed';
  }
}

function describe(error: unknown): TokenFailure {
  if (error instanceof joseErrors.JWKSNoMatchingKey) return { kind: 'invalid', error: 'kid not present' };
  if (error instanceof joseErrors.JWKSMultipleMatchingKeys) return { kind: 'invalid', error: 'kid ambiguous' };
  if (error instanceof joseErrors.JWTExpired) return { kind: 'invalid', error: 'token expired' };
  if (error instanceof joseErrors.JWTClaimValidationFailed)
    return { kind: 'invalid', error: `claim ${error.claim} ${error.reason}` };
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return { kind: 'invalid', error: 'algorithm not allowed' };
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return { kind: 'invalid', error: 'signature verification failed' };
  if (error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid)
    return { kind: 'jwks', error: error.code };
  if (error instanceof joseErrors.JOSEError) return { kind: 'invalid', error: error.code };
  return { kind: 'jwks', error: error instanceof Error ? error.name : 'fetch failed' };
}

export class RealmVerifier {
  /**
   * Key sets by how they are fetched and where: a realm whose CA changes (a record's shared_ca_pem replaced after a
   * compromise) gets another dispatcher, so its keys are fetched again through the new trust, never the old.
   */
  readonly #keySets = new WeakMap<Dispatcher, Map<string, ReturnType<typeof createRemoteJWKSet>>>();
  readonly #cache = new VerifiedTokenCache<JWTPayload>();
  readonly #trusts = new Map<string, { agent: Agent; tag: string }>();
  #trustsMade = 0;

  /** An agent trusting exactly `caPem` (or the system CAs when null), reused per CA. */
  dispatcherFor(caPem: string | null): Dispatcher {
    return this.#trust(caPem).agent;
  }

  /** A short name for that trust, the same for the same CA: what a cache scope carries so another CA misses it. */
  trustTag(caPem: string | null): string {
    return this.#trust(caPem).tag;
  }

  #trust(caPem: string | null): { agent: Agent; tag: string } {
    const key = caPem ?? '';
    let trust = this.#trusts.get(key);
    if (!trust) {
      const agent = new Agent({ connect: caPem ? { ca: caPem } : {}, headersTimeout: 10_000, bodyTimeout: 10_000 });
      trust = { agent, tag: `ca${this.#trustsMade++}` };
      this.#trusts.set(key, trust);
    }
    return trust;
  }

  #keySet(realm: RealmSpec) {
    let sets = this.#keySets.get(realm.dispatcher);
    if (!sets) {
      sets = new Map();
      this.#keySets.set(realm.dispatcher, sets);
    }
    let set = sets.get(realm.jwksUrl);
    if (!set) {
      set = createRemoteJWKSet(new URL(realm.jwksUrl), {
        timeoutDuration: 10_000,
        [customFetch]: (url, options) =>
          fetch(url, { ...(options as object), dispatcher: realm.dispatcher }) as unknown as Promise<Response>,
      });
      sets.set(realm.jwksUrl, set);
    }
    return set;
  }

  /**
   * The verified payload; throws TokenFailed. Cached per (scope, token) until
   * `exp`; the realm is only worked out on a miss (it may need lookups).
   */
  async verify(token: string, scope: string, realmOf: () => RealmSpec | Promise<RealmSpec>): Promise<JWTPayload> {
    const hit = this.#cache.get(token, scope);
    if (hit) return hit;
    const realm = await realmOf();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.#keySet(realm), {
        algorithms: ALLOWED_ALGORITHMS,
        requiredClaims: ['exp', 'sub'],
        ...(realm.issuer ? { issuer: [realm.issuer, `${realm.issuer}/`] } : {}),
      }));
    } catch (error) {
      throw new TokenFailed(describe(error));
    }
    this.#cache.set(token, payload, Number(payload.exp), String(payload.jti ?? ''), scope);
    return payload;
  }

  async close(): Promise<void> {
    const trusts = [...this.#trusts.values()];
    this.#trusts.clear();
    await Promise.all(trusts.map((t) => t.agent.close().catch(() => {})));
  }
}

/** Keycloak's layout first, then OIDC discovery for other providers. */
export async function sharedJwksUrl(issuer: string, dispatcher: Dispatcher): Promise<string> {
  const base = issuer.replace(/\/+$/, '');
  const derived = `${base}/protocol/openid-connect/certs`;
  try {
    const res = await fetch(derived, { dispatcher, method: 'GET' });
    await res.body?.cancel();
    if (res.ok) return derived;
    const discovery = await fetch(`${base}/.well-known/openid-configuration`, { dispatcher });
    const doc = (await discovery.json()) as { jwks_uri?: unknown };
    if (discovery.ok && typeof doc.jwks_uri === 'string') return doc.jwks_uri;
  } catch (error) {
    throw new TokenFailed(describe(error));
  }
  throw new TokenFailed({ kind: 'jwks', error: 'jwks_uri not found' });
}
