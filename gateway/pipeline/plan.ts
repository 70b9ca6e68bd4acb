/**
 * The request plan: the one ordered table of stages, and what builds every chain from it. Each stage is listed once,
 * here, in the order it runs, with its scope:
 * - `listener`: runs for every request a listener takes, built once per listener;
 * - `route`: compiled onto the routes that use it. Its factory sees the route's needs and answers null where the
 *   stage would do nothing, so that is decided once, when routes compile, never per request (fastify builds each
 *   route's hooks from one ordered list the same way).
 * Requests, RPC calls and websocket upgrades run the same listener stages and their route's chain; an upgrade's
 * chain ends in the mount's upgrade hook instead of its handler (Caddy runs upgrades through its one handler chain).
 */
import type { Config } from '../config/schema.ts';
import type { SqlConnection } from '../db/connection.ts';
import type { FoldedWarnings } from '../folded-warnings.ts';
import { TrustedProxies } from '../http/client-address.ts';
import type { AccessSink } from '../log.ts';
import { guardMeshBody } from '../mesh/body-guard.ts';
import { MESH_DIRECTORY } from '../mesh/directory.ts';
import { createMeshVerifyStage } from '../mesh/verify.ts';
import type { AuthMode, RouteDef, ServiceMount } from '../module.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import type { RequestObserver } from '../observability/request.ts';
import { AUTHENTICATOR } from '../principal.ts';
import type { RpcMount } from '../routing/rpc.ts';
import type { RouteResolver } from '../routing/service-table.ts';
import type { ServiceRegistry } from '../services.ts';
import { createPipeline, type Entry } from './run.ts';
import type { Stage } from './stage.ts';
import { createAccessLogStage } from './stages/access-log.ts';
import { AUTH_FAILURES, createAuthenticateStage } from './stages/authenticate.ts';
import { createAuthorizeStage } from './stages/authorize.ts';
import { createCanonicalPathStage } from './stages/canonical-path.ts';
import { createDispatchStage, createUpgradeStage } from './stages/dispatch.ts';
import { createLimitsStage } from './stages/limits.ts';
import { createRequestIdStage } from './stages/request-id.ts';
import { createRouteMatchStage } from './stages/route-match.ts';

/** What the stages' factories draw on: the gateway's parts, all there once the domains are up. */
export interface PlanSources {
  readonly config: Readonly<Config>;
  /** The services the domains registered (the authenticator, the mesh directory). */
  readonly services: ServiceRegistry;
  readonly sql: SqlConnection;
  readonly metrics: MetricsRegistry;
  readonly accessLog: AccessSink;
  /** Every request's span and metrics; null where nothing observes (unit tests of the plan). */
  readonly observer: RequestObserver | null;
  /** Failed requests' warnings, folded across every listener of the gateway. */
  readonly warnings?: FoldedWarnings | undefined;
  /** The configured public origin: the session cookie counts on API routes only from its pages. */
  origin(): string;
  now(): Date;
}

/** What a listener gives its stages: where its paths go (the live table, swapped on a routing change). */
export interface ListenerSpec {
  readonly routes: () => RouteResolver;
  /** Connect-RPC paths, matched ahead of the prefix table; the main listener's only. */
  readonly rpc?: RpcMount | null;
  /** Fields added to every access line of this listener. */
  readonly accessFields?: Readonly<Record<string, string | number>> | undefined;
}

/**
 * Where the platform session cookie stands in for a bearer. `api`: only on a request from a page of the gateway's
 * own origin (the CSRF defence; gateway/http/session-cookie.ts), and a stale one is refused. `browser`: a mount a
 * browser navigates to (runtime URLs, the frontend) takes it as sent, and a stale one counts as no credential, so
 * the mount can send the browser to sign in. `none`: the bearer only.
 */
export type SessionUse = 'none' | 'api' | 'browser';

/** What a route asks of the pipeline; a route-scoped stage's factory reads it to decide whether it is in the chain. */
export interface RouteSpec {
  readonly auth: AuthMode;
  /** Refuse mesh-brokered principals. */
  readonly nativeOnly: boolean;
  /** Also accept bearer tokens of trusted shared-realm issuers. */
  readonly sharedRealm: boolean;
  readonly session: SessionUse;
  /** Signed mesh requests arrive here: the main listener's routes (peers call the origin), not a legacy port's. */
  readonly mesh: boolean;
  readonly handle: RouteDef['handle'];
  /** The mount's websocket hook: a route without one has no upgrade chain. */
  readonly upgrade?: ServiceMount['upgrade'];
}

/** Which exchange a chain serves: a request (and an RPC), or a websocket upgrade. */
export type ChainKind = 'request' | 'upgrade';

/** A route's compiled chains; `upgrade` is null where the route takes no upgrades. */
export interface RouteChains {
  readonly stages: readonly Stage[];
  readonly upgradeStages: readonly Stage[] | null;
}

type ListenerStageFactory = (listener: ListenerSpec) => Stage;
type RouteStageFactory = (route: RouteSpec, chain: ChainKind) => Stage | null;
type Planned =
  | { readonly name: string; readonly scope: 'listener'; prepare(sources: PlanSources): ListenerStageFactory }
  | { readonly name: string; readonly scope: 'route'; prepare(sources: PlanSources): RouteStageFactory };

/** A stage built once per gateway and shared by every listener or route that runs it. */
const shared = (stage: Stage) => () => stage;

/** The one order. Adding a stage: write it under stages/, list it here where it runs, and extend plan.test.ts. */
export const STAGE_PLAN = [
  { name: 'requestId', scope: 'listener', prepare: () => shared(createRequestIdStage()) },
  {
    name: 'accessLog',
    scope: 'listener',
    prepare(s) {
      // X-Forwarded-For names the client only when it comes from a trusted proxy.
      const proxies = new TrustedProxies(s.config.auth.forwardAuth.trustedProxies);
      return (listener) => createAccessLogStage(s.accessLog, listener.accessFields, s.observer, proxies);
    },
  },
  { name: 'limits', scope: 'listener', prepare: (s) => shared(createLimitsStage(s.config.limits)) },
  { name: 'canonicalPath', scope: 'listener', prepare: () => shared(createCanonicalPathStage()) },
  {
    name: 'routeMatch',
    scope: 'listener',
    prepare: () => (listener) => createRouteMatchStage(listener.routes, listener.rpc ?? null),
  },
  {
    name: 'meshVerify',
    scope: 'route',
    prepare(s) {
      const directory = s.services.find(MESH_DIRECTORY);
      if (!directory) return () => null;
      const verify = createMeshVerifyStage({
        directory,
        sql: s.sql,
        mesh: s.config.mesh,
        metrics: s.metrics,
        now: s.now,
      });
      // Anonymous routes take no identity, so there is nothing a signature could admit; a peer's mesh egress relays
      // requests, never websockets, and calls the origin, never a legacy port.
      return (route, chain) => (route.auth === 'none' || !route.mesh || chain === 'upgrade' ? null : verify);
    },
  },
  {
    name: 'authenticate',
    scope: 'route',
    prepare(s) {
      const native = s.services.get(AUTHENTICATOR);
      const sharedRealm = s.services.find(MESH_DIRECTORY)?.egressAuthenticator ?? native;
      const failures = s.metrics.counter(AUTH_FAILURES);
      return (route) =>
        route.auth === 'none'
          ? null
          : createAuthenticateStage(route.auth, route.sharedRealm ? sharedRealm : native, {
              failures,
              session: route.session,
              origin: s.origin,
            });
    },
  },
  {
    name: 'authorize',
    scope: 'route',
    prepare: () => (route) =>
      route.auth === 'admin' || route.nativeOnly ? createAuthorizeStage(route.auth, route.nativeOnly) : null,
  },
  {
    name: 'dispatch',
    scope: 'route',
    prepare: () => (route, chain) => {
      if (chain === 'request') return createDispatchStage(route.handle);
      return route.upgrade ? createUpgradeStage(route.upgrade) : null;
    },
  },
] as const satisfies readonly Planned[];

/** The order every chain follows, read from the plan (ARCHITECTURE.md draws it; plan.test.ts checks the drawing). */
export const STAGE_ORDER: readonly string[] = STAGE_PLAN.map((planned) => planned.name);

/** The chains of one gateway, every one of them built from STAGE_PLAN with the gateway's sources. */
export interface RequestPlan {
  /** A route's chains, compiled when routes compile (at start, and on a routing change). */
  route(spec: RouteSpec): RouteChains;
  /** A listener's entry points: requests and upgrades through the listener stages, then their route's chain. */
  listener(spec: ListenerSpec, logger: Parameters<typeof createPipeline>[1]): Entry;
}

export function buildRequestPlan(sources: PlanSources): RequestPlan {
  const listenerStages: ListenerStageFactory[] = [];
  const routeStages: RouteStageFactory[] = [];
  for (const planned of STAGE_PLAN as readonly Planned[]) {
    if (planned.scope === 'listener') listenerStages.push(planned.prepare(sources));
    else routeStages.push(planned.prepare(sources));
  }
  const chain = (spec: RouteSpec, kind: ChainKind): Stage[] =>
    routeStages.flatMap((factory) => factory(spec, kind) ?? []);
  return {
    route(spec) {
      const upgradeStages = chain(spec, 'upgrade');
      // The chain must end where the exchange is answered: without the mount's hook there is no upgrade chain.
      const answered = upgradeStages.at(-1)?.name === 'dispatch';
      return { stages: chain(spec, 'request'), upgradeStages: answered ? upgradeStages : null };
    },
    listener(spec, logger) {
      const prelude = listenerStages.map((factory) => factory(spec));
      // The mesh body guard must see a request before any stage: it wraps the body before its first chunk.
      return createPipeline(prelude, logger, { onArrival: guardMeshBody, warnings: sources.warnings });
    },
  };
}
