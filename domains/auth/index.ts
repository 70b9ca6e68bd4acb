/**
 * The native realm: local users, tokens, PATs, JWKS, the declared
 * attribute vocabulary. Provides the
 * gateway's Authenticator and the USER_DIRECTORY other domains use.
 */
import type { ChangeFeed } from '../../gateway/db/change-feed.ts';
import { TrustedProxies } from '../../gateway/http/client-address.ts';
import type { HandlerModule } from '../../gateway/module.ts';
import { AUTHENTICATOR } from '../../gateway/principal.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { attributeRoutes } from './attribute-routes.ts';
import { AttributeVocabulary } from './attributes.ts';
import { userCommand } from './cli.ts';
import { AuthErrors } from './errors.ts';
import { ForwardAuth } from './forward-auth.ts';
import { authBaseUrl, tokenIssuer } from './issuer.ts';
import { loadSigningKeyRing, SIGNING_KEYS } from './keys.ts';
import { SessionRevocations } from './revocations.ts';
import { authRoutes, userRoutes } from './routes.ts';
import { AuthService } from './service.ts';
import { createAuthStore } from './store.ts';
import { LoginThrottle } from './throttle.ts';
import { ThrottleLedger } from './throttle-ledger.ts';
import { TokenSigner } from './tokens.ts';
import { USER_DIRECTORY, UserDirectory } from './users.ts';

export { ATTRIBUTE_NAME, ATTRIBUTE_NAME_RULE } from './attributes.ts';
export { SIGNING_KEYS, type SigningKeyOverview } from './keys.ts';
export { customClaims, VerifiedTokenCache } from './tokens.ts';
export { USER_DIRECTORY, type UserDirectory } from './users.ts';

/** Browser sign-out: ends the login session an access token (the frontend's cookie) belongs to. */
export interface SessionSignOut {
  endSessionOf(accessToken: string): Promise<void>;
}
export const SESSION_SIGN_OUT = createServiceKey<SessionSignOut>('sessionSignOut');

/**
 * Writes by other processes and the CLI (users, ended sessions, PATs, the vocabulary) reach this one's caches.
 * A dropped principal is re-verified against the rows on its next request.
 */
function followChanges(
  feed: ChangeFeed,
  parts: {
    users: UserDirectory;
    revocations: SessionRevocations;
    tokens: { dropJti(jti: string): void };
    dropCachedPrincipals: () => void;
  },
): void {
  const everything = () => {
    parts.users.invalidate();
    parts.revocations.reload();
  };
  feed.subscribe('users', () => parts.users.invalidate());
  feed.subscribe('revoked_sessions', () => parts.revocations.reload());
  feed.subscribe('pats', (jti) => parts.tokens.dropJti(jti));
  feed.subscribe('attribute_schema', parts.dropCachedPrincipals);
  for (const topic of ['users', 'revoked_sessions', 'pats', 'attribute_schema']) feed.onReset(topic, everything);
}

export const authModule: HandlerModule = {
  name: 'auth',
  errors: AuthErrors,
  commands: [userCommand],
  async init(deps) {
    const store = createAuthStore(deps.db);
    const nowSeconds = () => Math.floor(deps.now().getTime() / 1000);
    const { signingAlgorithm, accessTokenTtlSeconds } = deps.config.auth;
    // A retired key stays while an access token or a live PAT it may have signed can still be presented.
    const outstandingUntil = (retiredAt: number) =>
      Math.max(retiredAt + accessTokenTtlSeconds, store.latestLivePatExp(retiredAt) ?? 0);
    const keys = await loadSigningKeyRing(deps.config.dataDir, signingAlgorithm, outstandingUntil, nowSeconds);
    const signer = new TokenSigner(keys, tokenIssuer(deps.config, deps.runtime));
    let service: AuthService | undefined;
    const dropCachedPrincipals = () => service?.cache.clear();
    const { refreshTokenTtlSeconds } = deps.config.auth;
    const revocations = new SessionRevocations(store, nowSeconds, accessTokenTtlSeconds, refreshTokenTtlSeconds);
    const vocabulary = new AttributeVocabulary(store, deps.now, dropCachedPrincipals);
    const users = new UserDirectory(store, deps.now, vocabulary, dropCachedPrincipals, revocations, deps.feed);
    const throttleSettings = deps.config.auth.throttle;
    const ledger = new ThrottleLedger(
      deps.sql,
      LoginThrottle.keepMs(throttleSettings),
      throttleSettings.knownClientSeconds * 1000,
    );
    const throttle = new LoginThrottle(throttleSettings, ledger, deps.logger, () => deps.now().getTime());
    const proxies = new TrustedProxies(deps.config.auth.forwardAuth.trustedProxies);
    service = new AuthService(store, signer, deps.config.auth, deps.now, vocabulary, { users, throttle, revocations });
    // First-start setup belongs to `serve`: a command on a fresh data dir (`meshgate user add`) creates only what it
    // is asked to.
    const generated =
      deps.purpose === 'serve'
        ? await users.ensureBootstrapAdmin(deps.config.bootstrapAdminUsername, deps.config.bootstrapAdminPassword)
        : null;
    if (generated) {
      deps.announce(
        `meshgate bootstrap admin: ` +
          `username=${deps.config.bootstrapAdminUsername} password=${generated} (shown ` +
          `once; stored hashed)`,
      );
    }
    followChanges(deps.feed, { users, revocations, tokens: service.cache, dropCachedPrincipals });
    deps.services.provide(AUTHENTICATOR, service);
    deps.services.provide(USER_DIRECTORY, users);
    deps.services.provide(SIGNING_KEYS, { algorithm: () => keys.active.alg, overlaps: () => keys.overlaps() });
    deps.services.provide(SESSION_SIGN_OUT, service);
    const maxBody = deps.config.limits.maxBodyBytes;
    return {
      routes: [
        ...authRoutes(
          service,
          signer,
          () => keys.jwks(),
          maxBody,
          () => authBaseUrl(deps.runtime),
          (req) => proxies.clientOf(req),
        ),
        ...new ForwardAuth(service, deps.config.auth.forwardAuth, () => deps.now().getTime()).routes(),
        ...userRoutes(users, maxBody),
        ...attributeRoutes(vocabulary, maxBody),
      ],
    };
  },
};
