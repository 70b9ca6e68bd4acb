/**
 * authorize: the route-level gates. Admin routes need a native-realm
 * administrator, and any route marked nativeOnly refuses mesh-brokered
 * callers first. Per-resource
 * ReBAC is decided by the domain's service, which knows the object.
 */

import { GatewayErrors } from '../../errors/gateway-errors.ts';
import type { RequestContext } from '../../http/context.ts';
import type { AuthMode } from '../../module.ts';
import { isNativeAdmin } from '../../principal.ts';
import type { Stage } from '../stage.ts';

export function createAuthorizeStage(mode: AuthMode, nativeOnly: boolean): Stage {
  const adminOnly = mode === 'admin';
  return {
    name: 'authorize',
    run(ctx: RequestContext) {
      if ((nativeOnly || adminOnly) && ctx.principal?.source === 'mesh') {
        throw GatewayErrors.make.endpoint_requires_native_realm();
      }
      if (adminOnly && !isNativeAdmin(ctx.principal)) throw GatewayErrors.make.admin_required();
      return 'continue';
    },
  };
}
