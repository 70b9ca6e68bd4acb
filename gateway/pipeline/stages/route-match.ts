/**
 * routeMatch: path → service (live routing config) → API route or service
 * mount. Sets ctx.route, whose compiled stages the runner runs next.
 */
import { GatewayErrors } from '../../errors/gateway-errors.ts';
import type { RequestContext } from '../../http/context.ts';
import { sendReply } from '../../http/respond.ts';
import type { RpcMount } from '../../routing/rpc.ts';
import type { RouteResolver } from '../../routing/service-table.ts';
import type { Stage, StageResult } from '../stage.ts';

/** The API route of `rest` (the path below the API prefix), or the refusal or redirect that stands for it. */
function matchApiRoute(ctx: RequestContext, table: RouteResolver, rest: string): StageResult {
  const lookup = table.api.lookup(ctx.method, rest);
  if (lookup.kind === 'redirect') {
    const prefix = ctx.rawPath.slice(0, ctx.rawPath.length - rest.length);
    const query = ctx.query.size > 0 ? `?${ctx.query}` : '';
    sendReply(ctx.res, { status: 307, headers: { location: `${prefix}${lookup.path}${query}` } });
    return 'done';
  }
  if (lookup.kind === 'method_not_allowed') {
    throw GatewayErrors.make.method_not_allowed({ allowed: lookup.allowed });
  }
  // %2F is admitted on URN routes only; elsewhere it is a non-canonical path, matched or not.
  if (ctx.hasEncodedSlash && (lookup.kind === 'miss' || !lookup.route.def.allowEncodedSlash)) {
    throw GatewayErrors.make.non_canonical_path({ problem: 'encoded_slash' });
  }
  if (lookup.kind === 'miss') throw GatewayErrors.make.route_not_found();
  ctx.route = lookup.route;
  ctx.params = lookup.params;
  return 'continue';
}

export function createRouteMatchStage(currentTable: () => RouteResolver, rpc: RpcMount | null = null): Stage {
  return {
    name: 'routeMatch',
    run(ctx: RequestContext) {
      // Connect-RPC paths (`/<package>.<Service>/<Method>`) come before the prefix table.
      const rpcRoute = rpc?.match(ctx.rawPath);
      if (rpcRoute) {
        ctx.service = 'rpc';
        ctx.route = rpcRoute;
        return 'continue';
      }
      const table = currentTable();
      const resolved = table.resolve(ctx.rawPath);
      if (!resolved) throw GatewayErrors.make.route_not_found();
      ctx.service = resolved.service;
      ctx.rest = resolved.rest;
      if (!resolved.enabled) throw GatewayErrors.make.service_disabled({ service: resolved.service });
      if (resolved.service === 'api') return matchApiRoute(ctx, table, resolved.rest);
      const mount = table.mounts.get(resolved.service);
      if (!mount) throw GatewayErrors.make.route_not_found();
      ctx.route = mount;
      return 'continue';
    },
  };
}
