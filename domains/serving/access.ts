/**
 * Who may see a deployment: the one decision behind the deployments API
 * (list, get) and every runtime URL (HTTP/1.1, HTTP/2, websocket upgrades,
 * legacy ports, mesh-brokered callers). A caller it refuses gets the same
 * 404 everywhere, so a runtime URL never tells "exists but forbidden" apart
 * from "does not exist".
 *
 * The answer is remembered per (deployment row, principal) because it runs
 * on every proxied request. Both keys are objects that change when the
 * decision's inputs change: the proxy's row is re-read after every write to
 * it (and at least each second, for the CLI), and a principal is the
 * verified token's, so new roles come with a new object. Grants live in the
 * authz index; its revision moves on every tuple write or delete, and then
 * everything remembered is dropped, so a revoked grant holds from the next
 * request on.
 */

import type { Principal } from '../../gateway/principal.ts';
import type { AuthzService } from '../authz/index.ts';
import type { DeploymentRow } from './store.ts';

export const VISIBILITIES = ['private', 'authenticated'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

export class DeploymentAccess {
  #revision = -1;
  #seen = new WeakMap<DeploymentRow, WeakMap<Principal, boolean>>();

  constructor(private readonly authz: AuthzService) {}

  /** May `principal` (null: anonymous) list, read and use the deployment? */
  canSee(principal: Principal | null, row: DeploymentRow): boolean {
    // Anonymous callers reach only deployments that take no credential; nothing to remember.
    if (principal === null) return !row.requiresAuth;
    const revision = this.authz.revision;
    if (revision !== this.#revision) {
      this.#revision = revision;
      this.#seen = new WeakMap();
    }
    let byPrincipal = this.#seen.get(row);
    if (byPrincipal === undefined) {
      byPrincipal = new WeakMap();
      this.#seen.set(row, byPrincipal);
    }
    let allowed = byPrincipal.get(principal);
    if (allowed === undefined) {
      allowed = decide(this.authz, principal, row);
      byPrincipal.set(principal, allowed);
    }
    return allowed;
  }
}

/**
 * Mesh-brokered callers see a model only through a relation the receiver
 * granted them, and never an app or a tool: they bypass nothing (no admin
 * bypass, no `authenticated` or public visibility), as every other domain
 * treats them. Native callers see a deployment that needs no credential
 * (anyone may call it anyway), one shared with every authenticated user,
 * or one they hold `viewer` (or better) on; native administrators pass the
 * check itself.
 */
function decide(authz: AuthzService, principal: Principal, row: DeploymentRow): boolean {
  const object = { namespace: row.kind, id: row.id };
  if (principal.source === 'mesh') return row.kind === 'model' && authz.check(principal, 'viewer', object);
  return !row.requiresAuth || row.visibility === 'authenticated' || authz.check(principal, 'viewer', object);
}
