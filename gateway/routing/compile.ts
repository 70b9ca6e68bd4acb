/**
 * Compiles route definitions and service mounts into the live tables, with
 * each route's stage list decided once here, never per request.
 */
import type { Counter } from 'prom-client';
import type { AuthMode, HandlerInstance, RouteDef } from '../module.ts';
import type { Stage } from '../pipeline/stage.ts';
import { createAuthenticateStage } from '../pipeline/stages/authenticate.ts';
import { createAuthorizeStage } from '../pipeline/stages/authorize.ts';
import { createDispatchStage } from '../pipeline/stages/dispatch.ts';
import type { Authenticator } from '../principal.ts';
import { type CompiledRoute, parsePattern, type RoutedDef, RouteTable } from './router.ts';
import { ServiceTable } from './service-table.ts';
import type { RoutingSnapshot } from './source.ts';

/** What route compilation draws on besides the route itself. */
export interface StageSources {
  authenticator: Authenticator;
  /** Native + trusted shared-realm tokens, for routes that accept them; the native one when absent. */
  sharedRealmAuthenticator?: Authenticator | undefined;
  /** Mesh ingress, compiled onto every route that takes an identity (anonymous routes take none to verify). */
  meshVerify?: Stage | undefined;
  /** Counts refused credentials (AUTH_FAILURES). */
  authFailures?: Counter<'reason'> | undefined;
  /** The configured origin: API routes then accept the session cookie from pages of that origin. */
  sessionOrigin?: (() => string) | undefined;
}

/** `api`: an API route (the session cookie may stand in for a bearer); mounts read the cookie themselves. */
function routeStages(
  auth: AuthMode,
  nativeOnly: boolean,
  handle: RouteDef['handle'],
  sources: StageSources,
  api: boolean,
  sharedRealm = false,
): Stage[] {
  const stages: Stage[] = [];
  if (auth !== 'none' && sources.meshVerify) stages.push(sources.meshVerify);
  const authenticator = sharedRealm
    ? (sources.sharedRealmAuthenticator ?? sources.authenticator)
    : sources.authenticator;
  if (auth !== 'none') {
    const options = { failures: sources.authFailures, sessionOrigin: api ? sources.sessionOrigin : undefined };
    stages.push(createAuthenticateStage(auth, authenticator, options));
  }
  if (auth === 'admin' || nativeOnly) stages.push(createAuthorizeStage(auth, nativeOnly));
  stages.push(createDispatchStage(handle));
  return stages;
}

export interface CompiledHandlers {
  api: RouteTable;
  mounts: ReadonlyMap<string, CompiledRoute>;
}

export function compileHandlers(instances: readonly HandlerInstance[], sources: StageSources): CompiledHandlers {
  const routes: CompiledRoute[] = [];
  const mounts = new Map<string, CompiledRoute>();
  for (const instance of instances) {
    for (const def of instance.routes ?? []) {
      routes.push({
        def,
        segments: parsePattern(def.path),
        stages: routeStages(def.auth, def.nativeOnly ?? false, def.handle, sources, true, def.acceptSharedRealm),
      });
    }
    for (const mount of instance.mounts ?? []) {
      if (mounts.has(mount.service)) throw new Error(`service '${mount.service}' is mounted twice`);
      const def: RoutedDef = { method: 'GET', path: '/', auth: mount.auth, handle: mount.handle };
      mounts.set(mount.service, {
        def,
        segments: [],
        stages: routeStages(mount.auth, false, mount.handle, sources, false),
      });
    }
  }
  return { api: new RouteTable(routes), mounts };
}

export function buildServiceTable(snapshot: RoutingSnapshot, compiled: CompiledHandlers): ServiceTable {
  return new ServiceTable(snapshot, compiled.api, compiled.mounts);
}
