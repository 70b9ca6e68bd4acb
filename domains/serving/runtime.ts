/**
 * The path-based runtime URL mounts, the public access pattern:
 * `<models prefix>/<id>/...`, `<apps prefix>/<id>/...`, `<tools prefix>/<id>/...`;
 * `/runtime/models/<id>/v1` is simply the upstream's `/v1` (the OpenAI-
 * compatible base) when the deployment strips its prefix, the default.
 */
import type { Duplex } from 'node:stream';
import type { Reply, RequestContext } from '../../gateway/http/context.ts';
import type { ServiceMount } from '../../gateway/module.ts';
import type { Principal } from '../../gateway/principal.ts';
import { ServingErrors } from './errors.ts';
import { replicasOf } from './input.ts';
import type { OpenStreams } from './open-streams.ts';
import type { DataPlanes } from './plane.ts';
import { buildTarget, forward, type ProxyTarget, slashRedirect } from './proxy.ts';
import type { RateLimiter } from './rate-limit.ts';
import { DEFAULT_RETRIES } from './retry.ts';
import type { DeploymentKind, DeploymentService } from './service.ts';
import { KIND_SERVICE } from './service.ts';
import type { RuntimeAuth } from './session.ts';
import type { DeploymentRow } from './store.ts';
import { proxyUpgrade } from './websocket.ts';

/** What admission reads of a request or an upgrade. */
type Caller = Pick<RequestContext, 'rawPath' | 'rest'>;

/** A caller admitted to a deployment: who, which row, the path below its prefix and where it goes. */
interface Admitted {
  row: DeploymentRow;
  principal: Principal | null;
  below: string;
  target: ProxyTarget;
}

export interface RuntimeDeps {
  deployments: DeploymentService;
  auth: RuntimeAuth;
  planes: DataPlanes;
  limiter: RateLimiter;
  streams: OpenStreams;
  defaultTimeoutSeconds: number;
}

/** `/<id>/rest...` → id and the rest (raw, '' when the URL ends at the id). */
function splitId(rest: string): { id: string; below: string } {
  const slash = rest.indexOf('/', 1);
  return slash === -1 ? { id: rest.slice(1), below: '' } : { id: rest.slice(1, slash), below: rest.slice(slash) };
}

/**
 * Where a mount is reached from. Path-based (the default): the configured
 * origin. A legacy port (legacy.ts): that port's origin for X-Forwarded-*,
 * and the path-based URL as the login page's `next` (the login page lives
 * on the origin).
 */
export interface RuntimeFront {
  origin(): URL;
  loginPath(rawPath: string): string;
}

export function runtimeMounts(deps: RuntimeDeps): ServiceMount[] {
  return (Object.keys(KIND_SERVICE) as DeploymentKind[]).map((kind) => runtimeMount(kind, deps));
}

export function runtimeMount(kind: DeploymentKind, deps: RuntimeDeps, front?: RuntimeFront): ServiceMount {
  const origin = front ? () => front.origin() : () => deps.auth.originUrl();
  // Targets are rebuilt only when the row or the public prefix changes (a routing PATCH).
  const targets = new WeakMap<DeploymentRow, ProxyTarget>();
  const targetFor = (row: DeploymentRow, prefix: string): ProxyTarget => {
    let target = targets.get(row);
    if (!target || target.prefix !== prefix) {
      target = buildTarget(
        deps.planes,
        {
          label: row.id,
          replicas: replicasOf(row),
          maxConcurrent: row.maxConcurrent,
          queueTimeoutMs: row.queueTimeoutMs,
          prefix,
          stripPrefix: row.stripPrefix,
          timeoutMs: Math.round((row.timeoutSeconds ?? deps.defaultTimeoutSeconds) * 1000),
          forwardAuthorization: row.forwardAuthorization,
          retries: row.retries ?? DEFAULT_RETRIES,
          affinity: row.affinity === 'cookie',
          rateLimit: row.rateLimit,
        },
        deps.limiter,
      );
      targets.set(row, target);
    }
    return target;
  };

  /**
   * The caller first, then the deployment as that caller may see it (the
   * API's decision). Not visible: anonymous callers are asked to sign in,
   * whether or not the id exists (the API answers them 401 too); signed-in
   * ones get the API's 404. Null: ask the caller to sign in.
   */
  function admitAs(ctx: Caller, principal: Principal | null): Admitted | null {
    const { id, below } = splitId(ctx.rest);
    const row = id ? deps.deployments.resolveFor(principal, kind, id) : null;
    if (!row) {
      if (principal) throw ServingErrors.make.deployment_not_found({ id });
      return null;
    }
    const prefix = ctx.rawPath.slice(0, ctx.rawPath.length - below.length);
    return { row, principal, below, target: targetFor(row, prefix) };
  }
  /**
   * The same caller and deployment decision, re-run on an open exchange: the credential the request presented must
   * still authenticate as the same user (a mesh-signed request keeps its brokered principal), and the deployment,
   * re-read, must still be visible to it (and `also` hold of it).
   */
  function stillAdmitted(ctx: RequestContext, principal: Principal | null, also = (_: DeploymentRow) => true) {
    return async () => {
      const again = await deps.auth.current(ctx);
      let admitted: Admitted | null;
      try {
        admitted = admitAs(ctx, again);
      } catch {
        return false;
      }
      return admitted !== null && admitted.principal?.userId === principal?.userId && also(admitted.row);
    };
  }
  function answer(ctx: RequestContext, admitted: Admitted | null): Promise<Reply | undefined> | Reply {
    if (!admitted) return deps.auth.unauthenticated(front ? { ...ctx, rawPath: front.loginPath(ctx.rawPath) } : ctx);
    const { row, principal, below, target } = admitted;
    // A deployment that exists and this caller may reach: its id is a bounded label (access line, request metrics).
    ctx.deployment = row.id;
    if (below === '' && (ctx.method === 'GET' || ctx.method === 'HEAD')) return slashRedirect(ctx);
    // A response may stream for as long as the upstream likes (SSE): it lasts only as long as the access does.
    deps.streams.trackResponse(ctx, stillAdmitted(ctx, principal));
    return forward(ctx, target, below, origin(), principal);
  }

  return {
    service: KIND_SERVICE[kind],
    auth: 'optional',
    browserSession: true,
    // The authenticate stage found the caller: admission awaits nothing, so neither does the proxy's path.
    handle: (ctx) => answer(ctx, admitAs(ctx, ctx.principal)),
    async upgrade(ctx, socket: Duplex, head: Buffer) {
      const admitted = admitAs(ctx, ctx.principal);
      if (!admitted) throw deps.auth.refusal(ctx);
      const { row, principal, below, target } = admitted;
      ctx.deployment = row.id;
      if (!row.websocket) throw ServingErrors.make.websocket_not_enabled({ id: row.id });
      await proxyUpgrade(ctx, socket, head, target, below, origin(), principal, {
        streams: deps.streams,
        stillAllowed: stillAdmitted(ctx, principal, (again) => again.websocket),
      });
    },
  };
}
