/**
 * The native realm: local users, tokens, PATs, JWKS, the declared
 * attribute vocabulary. Provides the
 * gateway's Authenticator and the USER_DIRECTORY other domains use.
 */
import type { HandlerModule } from '../../gateway/module.ts';
import { AUTHENTICATOR } from '../../gateway/principal.ts';
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

export { ATTRIBUTE_NAME, ATTRIBUTE_NAME_RULE } from './attributes.ts';
export { customClaims, VerifiedTokenCache } from './tokens.ts';
export { USER_DIRECTORY, type UserDirectory } from './users.ts';

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
    const vocabulary = new AttributeVocabulary(store, deps.now, dropCachedPrincipals);
    const users = new UserDirectory(store, deps.now, vocabulary, dropCachedPrincipals);
    const throttle = new LoginThrottle(deps.config.auth.throttle, deps.logger);
    const revocations = new SessionRevocations(store, () => Math.floor(deps.now().getTime() / 1000));
    service = new AuthService(store, signer, deps.config.auth, deps.now, vocabulary, { users, throttle, revocations });
    // First-start setup belongs to `serve`: a command on a fresh data dir (`meshgate user add`) creates only what it is asked to.
    const generated =
      deps.purpose === 'serve' ? await users.ensureBootstrapAdmin(deps.config.bootstrapAdminUsername, deps.config.bootstrapAdminPassword) : null;
    if (generated) {
      deps.announce(`meshgate bootstrap admin: username=${deps.config.bootstrapAdminUsername} password=${generated} (shown once; stored hashed)`);
    }
    deps.services.provide(AUTHENTICATOR, service);
    deps.services.provide(USER_DIRECTORY, users);
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
