/**
 * The native realm's logic: password
 * and refresh grants, bearer resolution to a Principal, PATs. Transport-free.
 * Sessions follow RFC 9700 §4.14.2: a login starts a refresh-token family
 * (its id is the access tokens' `sid`), each refresh rotates within it, and a
 * rotated token presented again revokes the whole family and its access tokens.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Config } from '../../gateway/config/schema.ts';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import type { Authenticator } from '../../gateway/principal.ts';
import { DEFAULT_TENANT, type Principal } from '../../gateway/principal.ts';
import type { AttributeVocabulary } from './attributes.ts';
import { AuthErrors } from './errors.ts';
import { verifyPassword } from './password.ts';
import type { logoutAnswer, patAnswer, patConfigAnswer, patCreatedAnswer, patListAnswer } from './response-wire.ts';
import type { SessionRevocations } from './revocations.ts';
import type { AuthStore, PatRow } from './store.ts';
import type { LoginThrottle } from './throttle.ts';
import { customClaims, PLATFORM_AUDIENCE, type TokenSigner, VerifiedTokenCache } from './tokens.ts';
import { subjectOf, type UserDirectory } from './users.ts';

export const PAT_SCOPES = ['openid', 'write', 'admin'] as const;
export type PatScope = (typeof PAT_SCOPES)[number];

export interface TokenResponse {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
  refresh_token: string;
  id_token: null;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/** What the realm keeps besides its tables: the live user view, the login throttle, revoked sessions. */
export interface AuthServiceParts {
  users: UserDirectory;
  throttle: LoginThrottle;
  revocations: SessionRevocations;
}

/** A verified bearer: its principal and, for access tokens, the session it belongs to. */
interface Verified {
  principal: Principal;
  sid: string | null;
}

export class AuthService implements Authenticator {
  readonly cache = new VerifiedTokenCache<Verified>();

  constructor(
    private readonly store: AuthStore,
    private readonly signer: TokenSigner,
    private readonly settings: Config['auth'],
    private readonly now: () => Date,
    private readonly vocabulary: AttributeVocabulary,
    private readonly parts: AuthServiceParts,
  ) {}

  /** The password grant; `clientAddress` is the caller's remote address, the throttle's per-client key. */
  async login(username: string, password: string, clientAddress: string | undefined): Promise<TokenResponse> {
    const userId = await this.parts.throttle.attempt(clientAddress, username, async () => {
      // Read once dequeued: a disable while the login waited still counts.
      const user = this.store.userByUsername(username);
      const matches = await verifyPassword(password, user?.passwordHash);
      return user && matches && !user.disabled && user.source === 'local' ? user.id : null;
    });
    // One answer for every failure, a disabled account included: no oracle on which part was wrong.
    if (userId === null) throw AuthErrors.make.invalid_credentials();
    return this.#issue(userId, randomUUID());
  }

  async refresh(refreshToken: string): Promise<TokenResponse> {
    const row = this.store.refreshByHash(sha256(refreshToken));
    if (!row) throw AuthErrors.make.invalid_refresh_token();
    if (row.revoked) {
      // Reuse of a rotated token: either the client or a thief holds a copy, and we cannot tell which,
      // so the whole session ends, the successor the legitimate party may hold included.
      if (row.familyId) this.parts.revocations.end([row.familyId]);
      throw AuthErrors.make.invalid_refresh_token();
    }
    // Rows from before sessions had families were revoked when families came in; one left is refused.
    if (!row.familyId || this.store.familyRevoked(row.familyId)) throw AuthErrors.make.invalid_refresh_token();
    if (Date.parse(row.expiresAt) <= this.now().getTime()) throw AuthErrors.make.invalid_refresh_token();
    // Refused before rotation: a disabled user's token is kept, so enabling the user restores the session.
    const user = this.parts.users.byId(row.userId);
    if (!user || user.disabled) throw AuthErrors.make.invalid_refresh_token();
    // Spent and succeeded in one synchronous step: a reuse detected while the access token is being signed
    // then finds the successor in the family and revokes it with the rest.
    const successor = this.#storeRefresh(user.id, row.familyId, row.tokenHash);
    const response = await this.#respond(user.id, row.familyId, successor);
    // Ended while signing: the token would carry a revoked `sid` and the successor is revoked; say so now.
    if (this.store.familyRevoked(row.familyId)) throw AuthErrors.make.invalid_refresh_token();
    return response;
  }

  /** Ends every session of the user (refresh tokens and the access tokens they issued); PATs stay. */
  logout(principal: Principal): z.output<typeof logoutAnswer> {
    this.parts.revocations.endUser(principal.userId);
    return {
      message: 'Logged out',
      logout_time: this.now().toISOString(),
      session_termination_requested: true,
      front_channel_logout_url: null,
      post_logout_redirect_uri: null,
    };
  }

  /**
   * Ends the session an access token belongs to (browser sign-out): its refresh family and its access
   * tokens. A token without a session (a PAT) or one that no longer verifies ends nothing.
   */
  async endSessionOf(bearer: string): Promise<void> {
    let sid: string | null;
    try {
      ({ sid } = this.cache.get(bearer) ?? (await this.#verify(bearer)));
    } catch {
      return;
    }
    if (sid !== null) this.parts.revocations.end([sid]);
  }

  /** Stores a new refresh token of the family (spending `spentHash` in the same step) and returns it. */
  #storeRefresh(userId: string, familyId: string, spentHash?: string): string {
    const refresh = randomBytes(32).toString('base64url');
    const at = this.now();
    const row = {
      tokenHash: sha256(refresh),
      userId,
      expiresAt: new Date(at.getTime() + this.settings.refreshTokenTtlSeconds * 1000).toISOString(),
      createdAt: at.toISOString(),
      familyId,
    };
    if (spentHash) this.store.rotateRefresh(spentHash, row);
    else this.store.insertRefresh(row);
    return refresh;
  }

  async #issue(userId: string, familyId: string): Promise<TokenResponse> {
    return this.#respond(userId, familyId, this.#storeRefresh(userId, familyId));
  }

  async #respond(userId: string, familyId: string, refresh: string): Promise<TokenResponse> {
    const user = this.store.userById(userId);
    if (!user) throw AuthErrors.make.invalid_credentials();
    const ttl = this.settings.accessTokenTtlSeconds;
    const { token } = await this.signer.sign(subjectOf(user, this.vocabulary), 'access', ttl, { sid: familyId });
    return { access_token: token, token_type: 'bearer', expires_in: ttl, refresh_token: refresh, id_token: null };
  }

  /** Synchronous for a cached token (most requests): no promise, no microtask turn on the proxy's path. */
  authenticate(bearer: string): Principal | Promise<Principal> {
    const cached = this.cache.get(bearer);
    if (!cached) return this.#verifiedLive(bearer);
    const drops = this.cache.drops;
    const principal = this.#live(cached);
    if (this.cache.drops === drops) return principal;
    // #live caught the change feed up, and that invalidated cached tokens (a PAT revoked, roles or attributes changed
    // by another process): this one is looked up once more rather than used as read before the catch-up.
    const again = this.cache.get(bearer);
    return again ? this.#live(again) : this.#verifiedLive(bearer);
  }

  #verifiedLive(bearer: string): Promise<Principal> {
    return this.#verify(bearer).then((verified) => this.#live(verified));
  }

  /** Checked on every request, cached token or not: a disable (here or by the CLI) or a logout acts at once. */
  #live({ principal, sid }: Verified): Principal {
    const user = this.parts.users.byId(principal.userId);
    if (!user || user.disabled || (sid !== null && this.parts.revocations.isRevoked(sid)))
      throw GatewayErrors.make.not_authenticated();
    return principal;
  }

  async #verify(bearer: string): Promise<Verified> {
    let payload: Awaited<ReturnType<TokenSigner['verify']>>;
    try {
      payload = await this.signer.verify(bearer);
    } catch {
      throw GatewayErrors.make.not_authenticated();
    }
    const user = this.parts.users.byId(String(payload.sub));
    if (!user) throw GatewayErrors.make.not_authenticated();
    const jti = String(payload.jti);
    let principal: Principal;
    if (payload.typ === 'pat') {
      const pat = this.store.patByJti(jti);
      if (!pat || pat.revoked || pat.ownerId !== user.id || pat.tokenHash !== sha256(bearer))
        throw GatewayErrors.make.not_authenticated();
      // A PAT is a handle on the user: live roles (capped by its scope) and the attributes a token would carry.
      const roles = pat.scope === 'admin' ? user.roles : user.roles.filter((r) => r !== 'admin');
      principal = this.#principal(
        user.id,
        user.username,
        user.email,
        roles,
        this.vocabulary.issued(user.attributes),
        'pat',
      );
    } else if (payload.typ === 'access') {
      const roles = Array.isArray(payload.roles) ? payload.roles.map(String) : [];
      principal = this.#principal(user.id, user.username, user.email, roles, customClaims(payload), 'jwt');
    } else {
      throw GatewayErrors.make.not_authenticated();
    }
    const verified = { principal, sid: typeof payload.sid === 'string' ? payload.sid : null };
    this.cache.set(bearer, verified, Number(payload.exp), jti);
    return verified;
  }

  #principal(
    userId: string,
    username: string,
    email: string | null,
    roles: readonly string[],
    attributes: Record<string, unknown>,
    authMethod: 'jwt' | 'pat',
  ): Principal {
    return Object.freeze({
      userId,
      username,
      email,
      roles,
      attributes,
      tenantId: DEFAULT_TENANT,
      source: 'local' as const,
      authMethod,
    });
  }

  me(principal: Principal) {
    return {
      sub: principal.userId,
      username: principal.username,
      email: principal.email,
      groups: [],
      roles: [...principal.roles],
      urn: `urn:li:corpuser:${principal.username}`,
      attributes: principal.attributes,
      source: principal.source,
      // Mesh callers: who they are at the source.
      ...(principal.source === 'mesh'
        ? { external_id: principal.externalId ?? null, source_cluster_id: principal.sourceClusterId ?? null }
        : {}),
    };
  }

  async createPat(
    principal: Principal,
    input: {
      name?: string | undefined;
      ttl_seconds?: number | undefined;
      scope?: string | undefined;
      aud?: string | undefined;
    },
  ): Promise<z.output<typeof patCreatedAnswer>> {
    const ttl = input.ttl_seconds ?? this.settings.patDefaultTtlSeconds;
    if (ttl < 60 || ttl > this.settings.patMaxTtlSeconds) {
      throw AuthErrors.make.pat_ttl_out_of_range({ min_seconds: 60, max_seconds: this.settings.patMaxTtlSeconds });
    }
    const scope = (input.scope ?? 'write') as PatScope;
    if (!PAT_SCOPES.includes(scope)) throw AuthErrors.make.pat_scope_invalid({ available_scopes: PAT_SCOPES });
    if (scope === 'admin' && !principal.roles.includes('admin')) throw AuthErrors.make.pat_scope_invalid({ scope });
    const user = this.store.userById(principal.userId);
    if (!user) throw GatewayErrors.make.not_authenticated();
    const aud = input.aud ?? PLATFORM_AUDIENCE;
    const createdAt = this.now();
    const issuedAt = Math.floor(createdAt.getTime() / 1000);
    const { token, jti, exp } = await this.signer.sign(subjectOf(user, this.vocabulary), 'pat', ttl, {
      scope,
      aud,
      issuedAt,
    });
    const at = createdAt.toISOString();
    const row = {
      jti,
      ownerId: user.id,
      name: input.name ?? null,
      scope,
      aud,
      exp,
      tokenHash: sha256(token),
      tenantId: DEFAULT_TENANT,
      revoked: false,
      createdAt: at,
      updatedAt: at,
    };
    this.store.insertPat(row);
    return { token, pat: patView(row) };
  }

  listPats(principal: Principal): z.output<typeof patListAnswer> {
    return { pats: this.store.listPats(principal.userId).map(patView) };
  }

  revokePat(principal: Principal, jti: string) {
    const pat = this.store.patByJti(jti);
    if (!pat || pat.ownerId !== principal.userId) throw AuthErrors.make.pat_not_found({ jti });
    this.store.revokePat(jti, this.now().toISOString());
    this.cache.dropJti(jti);
    return { revoked: true, jti };
  }

  patConfig(): z.output<typeof patConfigAnswer> {
    return {
      scope_hierarchy: [...PAT_SCOPES],
      scope_labels: {
        openid: 'Sign-in only (no administrator role)',
        write: 'Read and write as the owner (no administrator role)',
        admin: 'Everything the owner may do, administrator role included',
      },
      available_scopes: [...PAT_SCOPES],
      default_scope: 'write',
      ttl: {
        default_seconds: this.settings.patDefaultTtlSeconds,
        min_seconds: 60,
        max_seconds: this.settings.patMaxTtlSeconds,
      },
    };
  }
}

function patView(row: PatRow): z.output<typeof patAnswer> {
  return {
    id: row.jti,
    jti: row.jti,
    owner_id: row.ownerId,
    name: row.name,
    scope: row.scope,
    aud: row.aud,
    exp: row.exp,
    // The lifetime asked for at creation, as the SDK's PAT model echoes it: exp counts from the creation second.
    ttl_seconds: row.exp - Math.floor(Date.parse(row.createdAt) / 1000),
    tenant_id: row.tenantId,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    revoked: row.revoked,
  };
}
