/**
 * The native realm (issue 2): local users, tokens, PATs, JWKS, the declared
 * attribute vocabulary (contract §9.1). Provides the
 * gateway's Authenticator and the USER_DIRECTORY other domains use.
 */
import type { HandlerModule } from '../../gateway/module.ts';
import { AUTHENTICATOR } from '../../gateway/pipeline/stages/authenticate.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { attributeRoutes } from './attribute-routes.ts';
import { AttributeVocabulary } from './attributes.ts';
import { userCommand } from './cli.ts';
import { AuthErrors } from './errors.ts';
import { authBaseUrl, tokenIssuer } from './issuer.ts';
import { loadSigningKey } from './keys.ts';
import { SessionRevocations } from './revocations.ts';
import { authRoutes, userRoutes } from './routes.ts';
import { AuthService } from './service.ts';
import { createAuthStore } from './store.ts';
import { LoginThrottle } from './throttle.ts';
import { TokenSigner } from './tokens.ts';
import { USER_DIRECTORY, UserDirectory } from './users.ts';

export { USER_DIRECTORY, type UserDirectory } from './users.ts';

/** Browser sign-out: ends the login session an access token (the frontend's cookie) belongs to. */
export interface SessionSignOut {
  endSessionOf(accessToken: string): Promise<void>;
}
export const SESSION_SIGN_OUT = createServiceKey<SessionSignOut>('sessionSignOut');

export const authModule: HandlerModule = {
  name: 'auth',
  errors: AuthErrors,
  commands: [userCommand],
  async init(deps) {
    const store = createAuthStore(deps.db, deps.sqlite);
    const key = await loadSigningKey(deps.config.dataDir);
    const signer = new TokenSigner(key, tokenIssuer(deps.config, deps.runtime));
    let service: AuthService | undefined;
    const dropCachedPrincipals = () => service?.cache.clear();
    const nowSeconds = () => Math.floor(deps.now().getTime() / 1000);
    const revocations = new SessionRevocations(store, nowSeconds, deps.config.auth.accessTokenTtlSeconds);
    const vocabulary = new AttributeVocabulary(store, deps.now, dropCachedPrincipals);
    // Users change here or through the CLI (seen by data_version), which may also have ended sessions.
    const usersChanged = () => {
      dropCachedPrincipals();
      revocations.reload();
    };
    const users = new UserDirectory(store, deps.now, vocabulary, usersChanged, revocations);
    const throttle = new LoginThrottle(deps.config.auth.throttle, deps.logger);
    service = new AuthService(store, signer, deps.config.auth, deps.now, vocabulary, { users, throttle, revocations });
    const generated = await users.ensureBootstrapAdmin(deps.config.bootstrapAdminUsername, deps.config.bootstrapAdminPassword);
    if (generated) {
      deps.announce(`meshgate bootstrap admin: username=${deps.config.bootstrapAdminUsername} password=${generated} (shown once; stored hashed)`);
    }
    deps.services.provide(AUTHENTICATOR, service);
    deps.services.provide(USER_DIRECTORY, users);
    deps.services.provide(SESSION_SIGN_OUT, service);
    const jwks = { keys: [key.publicJwk] };
    const maxBody = deps.config.limits.maxBodyBytes;
    return {
      routes: [
        ...authRoutes(
          service,
          signer,
          () => jwks,
          maxBody,
          () => authBaseUrl(deps.runtime),
        ),
        ...userRoutes(users, maxBody),
        ...attributeRoutes(vocabulary, maxBody),
      ],
    };
  },
};
