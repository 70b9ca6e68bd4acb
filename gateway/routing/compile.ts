/**
 * Compiles route definitions and service mounts into the live tables. Each route's chains come from the request plan
 * (gateway/pipeline/plan.ts), decided once here, never per request.
 */
import type { HandlerInstance, RouteDef, ServiceMount } from '../module.ts';
import type { RequestPlan, RouteSpec } from '../pipeline/plan.ts';
import { type CompiledRoute, parsePattern, type RoutedDef, RouteTable } from './router.ts';
import { ServiceTable } from './service-table.ts';
import type { RoutingSnapshot } from './source.ts';

/** What the plan reads of an API route: the session cookie may stand in for a bearer, from the gateway's pages. */
function apiSpec(def: RouteDef): RouteSpec {
  return {
    auth: def.auth,
    nativeOnly: def.nativeOnly ?? false,
    sharedRealm: def.acceptSharedRealm ?? false,
    session: 'api',
    mesh: true,
    handle: def.handle,
  };
}

/**
 * A service mount as one route: its handler for every method and path below its prefix, its upgrade hook. `mesh`:
 * whether signed mesh requests reach it (the main listener's mounts; not a legacy port's).
 */
export function compileMount(mount: ServiceMount, plan: Pick<RequestPlan, 'route'>, mesh = true): CompiledRoute {
  const def: RoutedDef = { method: 'GET', path: '/', auth: mount.auth, handle: mount.handle };
  const spec: RouteSpec = {
    auth: mount.auth,
    nativeOnly: false,
    sharedRealm: false,
    session: mount.browserSession ? 'browser' : 'none',
    mesh,
    handle: mount.handle,
    upgrade: mount.upgrade,
  };
  return { def, segments: [], ...plan.route(spec) };
}

export interface CompiledHandlers {
  api: RouteTable;
  mounts: ReadonlyMap<string, CompiledRoute>;
}

export function compileHandlers(
  instances: readonly HandlerInstance[],
  plan: Pick<RequestPlan, 'route'>,
): CompiledHandlers {
  const routes: CompiledRoute[] = [];
  const mounts = new Map<string, CompiledRoute>();
  for (const instance of instances) {
    for (const def of instance.routes ?? []) {
      routes.push({ def, segments: parsePattern(def.path), ...plan.route(apiSpec(def)) });
    }
    for (const mount of instance.mounts ?? []) {
      if (mounts.has(mount.service)) throw new Error(`service '${mount.service}' is mounted twice`);
      mounts.set(mount.service, compileMount(mount, plan));
    }
  }
  return { api: new RouteTable(routes), mounts };
}

export function buildServiceTable(snapshot: RoutingSnapshot, compiled: CompiledHandlers): ServiceTable {
  return new ServiceTable(snapshot, compiled.api, compiled.mounts);
}
