/**
 * Who is calling, as every domain sees it (one principal model).
 * Services take a Principal, never a request. A mesh principal is a
 * receiver-local brokered user; admin bypass never applies to it.
 *
 */
import { createServiceKey } from './services.ts';

export type AuthMethod = 'jwt' | 'pat' | 'shared_jwt' | 'mesh';

export interface Principal {
  /** Local user id (uuid). For mesh callers, the receiver-local brokered user id. */
  readonly userId: string;
  readonly username: string;
  readonly email: string | null;
  readonly roles: readonly string[];
  /** Custom attributes (clearance, country, ...) from token claims or per identity mode. */
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly tenantId: string;
  readonly source: 'local' | 'mesh';
  readonly authMethod: AuthMethod;
  /** Mesh only: `<source_user>@<source_cluster>`, source cluster id and name. */
  readonly externalId?: string;
  readonly sourceClusterId?: string;
  readonly sourceClusterName?: string;
}

export const DEFAULT_TENANT = '__default__';

/** Admin bypass: native administrators only, never mesh-brokered users. */
export function isNativeAdmin(principal: Pick<Principal, 'source' | 'roles'> | null): boolean {
  return principal !== null && principal.source === 'local' && principal.roles.includes('admin');
}

/** How a bearer credential becomes a Principal; provided by the auth domain, used by the authenticate stage. */
export interface Authenticator {
  /**
   * Resolves a bearer credential; throws (or rejects with) not_authenticated (401) when it is not valid. A credential
   * already verified may be answered synchronously.
   */
  authenticate(bearer: string): Principal | Promise<Principal>;
}

export const AUTHENTICATOR = createServiceKey<Authenticator>('authenticator');
