/**
 * A real OpenID provider as the shared realm of a test: `oidc-provider` from npm over HTTPS on
 * 127.0.0.1, port 0, with its own throwaway CA (gateway/tls/material.ts), so
 * consumers verify TLS against `caPem`. It looks like a Keycloak realm:
 *   issuer     https://127.0.0.1:<port>/realms/<realm>
 *   discovery  {issuer}/.well-known/openid-configuration
 *   JWKS       {issuer}/protocol/openid-connect/certs   (derived from the issuer, as federation does)
 *   token      {issuer}/protocol/openid-connect/token
 * Personas get tokens with the Keycloak-style password grant the SDK uses.
 * oidc-provider has no password grant, so one is registered
 * through its extension point (`registerGrantType`): it checks the persona's
 * password, records a Grant and issues an AccessToken through the provider's
 * own token machinery, in JWT format (`at+jwt`, ES256 from the provider's
 * JWKS) for a resource server whose identifier is the audience. Custom claims
 * (clearance, tenant_id, ...) are top-level claims via `extraTokenClaims`.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload, SignJWT } from 'jose';
import Provider, {
  type Adapter,
  type AdapterPayload,
  errors,
  type ResourceServerInstance,
  type TokenEndpointGrantContext,
} from 'oidc-provider';
import { Agent, fetch } from 'undici';
import { ensureTlsMaterial } from '../../../gateway/tls/material.ts';
import type { After } from './process.ts';

export interface Persona {
  username: string;
  password: string;
  /** Subject of the persona's tokens; a fresh UUID (as Keycloak uses) when absent. */
  sub?: string;
  /**
   * Top-level claims in the persona's tokens, e.g. { clearance: 'S' }. `tenant_id` defaults to '__default__'; null
   * omits a claim.
   */
  claims?: Record<string, unknown>;
}

export interface OidcProviderOptions {
  personas: Persona[];
  /** Realm name in the issuer path (default 'federation'). */
  realm?: string;
  /** Public client personas log in through (default 'kamiwaza-platform', the SDK's client id). */
  clientId?: string;
  /** `aud` of the access tokens (default 'meshgate'). */
  audience?: string;
  /** Access token lifetime (default 300 s, as the platform's own tokens). */
  accessTokenTtlSeconds?: number;
}

export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope?: string;
}

export interface OidcPeer {
  /** https://127.0.0.1:<port>/realms/<realm> */
  issuer: string;
  discoveryUrl: string;
  jwksUri: string;
  tokenEndpoint: string;
  /** PEM of the CA that issued the provider's TLS certificate: what consumers trust (shared_ca_pem). */
  caPem: string;
  clientId: string;
  audience: string;
  /** An undici Agent that trusts caPem, for fetch/request from tests. Closed in t.after. */
  dispatcher: Agent;
  /** `sub` of a persona's tokens. */
  subjectOf(username: string): string;
  /** The access token (a JWT) from a real password grant at the token endpoint; throws on a non-200. */
  passwordToken(username: string, password: string, scope?: string): Promise<string>;
  /** The raw password-grant exchange, for tests of the failure answers. */
  passwordGrant(
    username: string,
    password: string,
    scope?: string,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /**
   * A JWT signed with the realm's own key and kid, claims as given over the defaults of a persona's
   * token (iss, aud, sub, iat, exp in 5 min, tenant_id): for negative tests (expired, wrong aud, other
   * tenant). `foreignKey: true` signs with a key the realm never published instead.
   */
  mintToken(claims: JWTPayload & Record<string, unknown>, options?: { foreignKey?: boolean }): Promise<string>;
  /** Stops the provider now (the shared realm goes away); t.after also calls it. */
  stop(): Promise<void>;
}

const ALG = 'ES256';

export async function startOidcProvider(t: After, options: OidcProviderOptions): Promise<OidcPeer> {
  const realm = options.realm ?? 'federation';
  const clientId = options.clientId ?? 'kamiwaza-platform';
  const audience = options.audience ?? 'meshgate';
  const ttl = options.accessTokenTtlSeconds ?? 300;
  const personas = new Map(options.personas.map((p) => [p.username, { ...p, sub: p.sub ?? randomUUID() }]));
  const bySub = new Map([...personas.values()].map((p) => [p.sub, p]));

  const tlsDir = mkdtempSync(join(tmpdir(), 'meshgate-oidc-'));
  t.after(() => rmSync(tlsDir, { recursive: true, force: true }));
  const tls = await ensureTlsMaterial({
    tlsDir,
    names: ['127.0.0.1', 'localhost', '::1'],
    clusterName: `oidc-${realm}`,
  });
  const signingJwk = await newSigningJwk();

  let provider: Provider | undefined;
  const server = createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    const prefix = `/realms/${realm}`;
    const url = req.url ?? '/';
    if (!provider || !(url === prefix || url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}?`))) {
      res.writeHead(404).end();
      return;
    }
    // Mounted under the issuer path the way Express mounts it: oidc-provider reads originalUrl.
    Object.assign(req, { originalUrl: url, url: url.slice(prefix.length) || '/' });
    provider.callback()(req, res);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const dispatcher = new Agent({ connect: { ca: tls.caPem } });
  const stop = () => closeServer(server);
  t.after(async () => {
    await stop();
    await dispatcher.close();
  });

  const port = (server.address() as { port: number }).port;
  const issuer = `https://127.0.0.1:${port}/realms/${realm}`;
  const resourceServer = jwtResourceServer(audience, ttl);
  provider = new Provider(issuer, {
    adapter: mapAdapter(),
    jwks: { keys: [signingJwk] },
    ttl: { AccessToken: ttl, Grant: ttl },
    clients: [
      {
        client_id: clientId,
        token_endpoint_auth_method: 'none',
        grant_types: ['password'],
        response_types: [],
        redirect_uris: [],
      },
    ],
    clientDefaults: { id_token_signed_response_alg: ALG },
    enabledJWA: { idTokenSigningAlgValues: [ALG] },
    cookies: { keys: [randomUUID()] },
    features: { devInteractions: { enabled: false } },
    claims: { openid: ['sub'], profile: ['preferred_username'], email: ['email'] },
    scopes: ['openid', 'profile', 'email', 'offline_access'],
    routes: {
      authorization: '/protocol/openid-connect/auth',
      token: '/protocol/openid-connect/token',
      jwks: '/protocol/openid-connect/certs',
      userinfo: '/protocol/openid-connect/userinfo',
      revocation: '/protocol/openid-connect/revoke',
      end_session: '/protocol/openid-connect/logout',
    },
    findAccount: (_ctx, sub) => {
      const persona = bySub.get(sub);
      return persona && { accountId: sub, claims: () => ({ sub, preferred_username: persona.username }) };
    },
    extraTokenClaims: (_ctx, token) => {
      const persona = 'accountId' in token ? bySub.get(token.accountId) : undefined;
      return persona && personaClaims(persona, clientId);
    },
  });
  provider.registerGrantType(
    'password',
    async (ctx: TokenEndpointGrantContext<{ username?: string; password?: string }>) => {
      const { username, password, scope } = ctx.oidc.params;
      const persona = personas.get(String(username ?? ''));
      if (!persona || !sameSecret(String(password ?? ''), persona.password)) {
        throw new errors.InvalidGrant('Invalid user credentials');
      }
      const scopes = grantedScopes(scope);
      const grant = new ctx.oidc.provider.Grant({ accountId: persona.sub, clientId });
      grant.addOIDCScope(scopes);
      grant.addResourceScope(audience, resourceServer.scope);
      const token = new ctx.oidc.provider.AccessToken({
        accountId: persona.sub,
        client: ctx.oidc.client,
        grantId: await grant.save(),
        gty: 'password',
        scope: scopes,
        resourceServer,
      });
      const accessToken = await token.save();
      ctx.body = { access_token: accessToken, token_type: 'Bearer', expires_in: token.expiration, scope: scopes };
    },
    ['username', 'password'],
  );

  const base = { issuer, audience, clientId };
  const peer: OidcPeer = {
    ...base,
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    jwksUri: `${issuer}/protocol/openid-connect/certs`,
    tokenEndpoint: `${issuer}/protocol/openid-connect/token`,
    caPem: tls.caPem,
    dispatcher,
    stop,
    subjectOf(username) {
      const persona = personas.get(username);
      if (!persona) throw new Error(`no persona ${username}`);
      return persona.sub;
    },
    async passwordGrant(username, password, scope = 'openid email profile') {
      const form = new URLSearchParams({ grant_type: 'password', client_id: clientId, username, password, scope });
      const res = await fetch(peer.tokenEndpoint, { method: 'POST', body: form, dispatcher });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async passwordToken(username, password, scope) {
      const { status, body } = await peer.passwordGrant(username, password, scope);
      if (status !== 200) throw new Error(`password grant for ${username} failed: ${status} ${JSON.stringify(body)}`);
      return body.access_token as string;
    },
    async mintToken(claims, mintOptions = {}) {
      const jwk = mintOptions.foreignKey ? await newSigningJwk() : signingJwk;
      const now = Math.floor(Date.now() / 1000);
      const payload = {
        iss: issuer,
        aud: audience,
        sub: randomUUID(),
        iat: now,
        exp: now + ttl,
        tenant_id: '__default__',
        jti: randomUUID(),
        ...claims,
      };
      return new SignJWT(payload)
        .setProtectedHeader({ alg: ALG, typ: 'at+jwt', kid: jwk.kid as string })
        .sign(await importJWK(jwk, ALG));
    },
  };
  return peer;
}

/** Claims of a persona's tokens: Keycloak's own (preferred_username, azp) and the persona's custom claims. */
function personaClaims(persona: Persona, clientId: string): Record<string, unknown> {
  const claims: Record<string, unknown> = {
    preferred_username: persona.username,
    azp: clientId,
    tenant_id: '__default__',
    ...persona.claims,
  };
  return Object.fromEntries(Object.entries(claims).filter(([, v]) => v !== null && v !== undefined));
}

/** The provider's storage: one Map per model, per provider (the default adapter warns on every start). */
function mapAdapter(): (name: string) => Adapter {
  const stores = new Map<string, Map<string, AdapterPayload>>();
  return (name) => {
    const store = stores.get(name) ?? new Map<string, AdapterPayload>();
    stores.set(name, store);
    return new MapAdapter(store);
  };
}

class MapAdapter implements Adapter {
  constructor(readonly store: Map<string, AdapterPayload>) {}

  async upsert(id: string, payload: AdapterPayload): Promise<void> {
    this.store.set(id, payload);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.store.get(id);
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return [...this.store.values()].find((p) => p.uid === uid);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return [...this.store.values()].find((p) => p.userCode === userCode);
  }

  async consume(id: string): Promise<void> {
    const payload = this.store.get(id);
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id: string): Promise<void> {
    this.store.delete(id);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    for (const [id, payload] of this.store) if (payload.grantId === grantId) this.store.delete(id);
  }
}

function jwtResourceServer(audience: string, ttl: number): ResourceServerInstance {
  const scope = 'openid profile email';
  return {
    scope,
    audience,
    accessTokenTTL: ttl,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: ALG } },
    scopes: new Set(scope.split(' ')),
    identifier: () => audience,
  };
}

function grantedScopes(requested: string | undefined): string {
  const allowed = new Set(['openid', 'profile', 'email']);
  const scopes = (requested ?? 'openid').split(' ').filter((s) => allowed.has(s));
  return [...new Set(['openid', ...scopes])].join(' ');
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function newSigningJwk(): Promise<JWK> {
  const { privateKey } = await generateKeyPair(ALG, { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: ALG, use: 'sig' };
}

function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  return closed;
}
