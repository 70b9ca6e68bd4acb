/**
 * The authenticator of the mesh egress route: native
 * credentials as everywhere, plus bearer tokens minted by a trusted shared
 * realm (PLATFORM_TRUSTED_SHARED_ISSUERS), with the tenant admission the
 * SDK's tests pin down: no `tenant_id` → 401 tenant_required, another
 * tenant → 403 mesh_tenant_not_admitted (string details).
 */
import { decodeJwt } from 'jose';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';
import type { Authenticator } from '../../gateway/principal.ts';
import { DEFAULT_TENANT, type Principal } from '../../gateway/principal.ts';
import { customClaims } from '../auth/index.ts';
import type { FederationDirectory } from '../federation/index.ts';
import type { IdentityResolver } from './identity.ts';

function issuerOf(token: string): string | null {
  try {
    const iss = decodeJwt(token).iss;
    return typeof iss === 'string' ? iss : null;
  } catch {
    return null;
  }
}

type SharedClaims = Awaited<ReturnType<IdentityResolver['verifySharedToken']>>;

/** The caller a verified shared-realm token names: only the default tenant is admitted to the mesh. */
function sharedRealmPrincipal(payload: SharedClaims): Principal {
  if (typeof payload.tenant_id !== 'string' || payload.tenant_id === '') throw MeshErrors.make.tenant_required();
  if (payload.tenant_id !== DEFAULT_TENANT) throw MeshErrors.make.mesh_tenant_not_admitted();
  const roles = (payload.realm_access as { roles?: unknown } | undefined)?.roles;
  return Object.freeze({
    userId: String(payload.sub),
    username: typeof payload.preferred_username === 'string' ? payload.preferred_username : String(payload.sub),
    email: typeof payload.email === 'string' ? payload.email : null,
    roles: Array.isArray(roles) ? roles.map(String) : [],
    attributes: customClaims(payload),
    tenantId: DEFAULT_TENANT,
    source: 'local' as const,
    authMethod: 'shared_jwt' as const,
  });
}

export function createEgressAuthenticator(
  native: Authenticator,
  federations: FederationDirectory,
  identity: IdentityResolver,
): Authenticator {
  /** The CA for the shared realm's JWKS: the one stored on a PAIRED record of that issuer, if any. */
  const caFor = (issuer: string) =>
    federations.paired().find((r) => r.shared_issuer_url?.replace(/\/+$/, '') === issuer.replace(/\/+$/, ''))
      ?.shared_ca_pem ?? null;
  return {
    async authenticate(bearer: string): Promise<Principal> {
      const issuer = issuerOf(bearer);
      if (!issuer || !federations.isTrustedSharedIssuer(issuer)) return native.authenticate(bearer);
      let payload: SharedClaims;
      try {
        payload = await identity.verifySharedToken(bearer, issuer, caFor(issuer));
      } catch {
        throw GatewayErrors.make.not_authenticated();
      }
      return sharedRealmPrincipal(payload);
    },
  };
}
