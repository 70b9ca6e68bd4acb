/**
 * The non-runtime services: `/` serves the operator console
 * (console/serve.ts) or proxies the operator's frontend upstream, which then
 * leaves `/console/` to the console; `/login`,
 * `/login/session` and `/logout` are always the gateway's own, and their
 * redirects name the configured origin; `/notebooks` and `/admin/compute`
 * proxy operator-configured upstreams, only where the routing config
 * enables them (the gateway answers service_disabled otherwise).
 */
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import type { NodeResponse, Reply, RequestContext } from '../../gateway/http/context.ts';
import { bearerOf } from '../../gateway/http/credential.ts';
import { fromOwnOrigin, sessionCookieValue } from '../../gateway/http/session-cookie.ts';
import type { ServiceMount } from '../../gateway/module.ts';
import { isNativeAdmin, type Principal } from '../../gateway/principal.ts';
import type { SessionSignOut } from '../auth/index.ts';
import { consoleHandler } from './console/serve.ts';
import { ServingErrors } from './errors.ts';
import { type OpenStreams, responseStream } from './open-streams.ts';
import { HTML_HEADERS, loginPage } from './pages.ts';
import type { DataPlanes } from './plane.ts';
import { buildTarget, forward, type ProxyTarget, slashRedirect, type TargetSpec } from './proxy.ts';
import { DEFAULT_RETRIES } from './retry.ts';
import type { RuntimeAuth } from './session.ts';
import { proxyUpgrade } from './websocket.ts';

export interface FrontendDeps {
  auth: RuntimeAuth;
  signOut: SessionSignOut;
  planes: DataPlanes;
  streams: OpenStreams;
  clusterName: string;
  prefixes: () => Readonly<Record<string, string>>;
  frontendUpstream: string | null;
  timeoutMs: number;
}

function sendHtml(response: NodeResponse, status: number, html: string): undefined {
  const res = response as ServerResponse;
  const body = Buffer.from(html);
  res.writeHead(status, { ...HTML_HEADERS, 'content-length': body.length });
  res.end(body);
  return undefined;
}

export function frontendMount(deps: FrontendDeps): ServiceMount {
  const { auth } = deps;
  const upstream = deps.frontendUpstream
    ? buildTarget(deps.planes, operatorSpec('frontend', deps.frontendUpstream, '', deps.timeoutMs))
    : null;
  const pages: Record<string, (ctx: RequestContext) => Promise<Reply | undefined> | Reply | undefined> = {
    'GET /login': async (ctx) => {
      const next = auth.safeNext(ctx.query.get('next'));
      // Whether the browser is signed in already: only decides where it goes next (a same-origin page either way).
      if (ctx.principal ?? (await auth.current(ctx)))
        return { status: 302, headers: { location: auth.absolute(next), 'cache-control': 'no-store' } };
      return sendHtml(
        ctx.res,
        200,
        loginPage({ clusterName: deps.clusterName, tokenUrl: `${deps.prefixes().api}/auth/token`, next }),
      );
    },
    'POST /login/session': (ctx) => {
      // The bearer proves the login; the cookie carries it for browser navigation to runtime URLs. A cookie alone
      // (the stage takes one on this mount) proves nothing new, and a mesh-brokered caller presents no credential.
      if (!ctx.principal || ctx.bearer === null || ctx.bearer !== bearerOf(ctx.req.headers)) throw auth.refusal(ctx);
      const location = auth.absolute(auth.safeNext(ctx.query.get('next')));
      return {
        status: 200,
        body: { location },
        headers: { 'set-cookie': auth.sessionCookie(ctx.bearer), 'cache-control': 'no-store' },
      };
    },
    // POST only: a link or image on another site must not sign anyone out (a GET is "safe", RFC 9110 §9.2.1).
    // A cookie counts only from a page of the gateway's own origin, as on the API: SameSite=Lax keeps it off a
    // cross-site POST, but not off one from a sibling subdomain, which is the same site.
    'POST /logout': async (ctx) => {
      const cookie = sessionCookieValue(ctx.req.headers.cookie);
      if (cookie && !fromOwnOrigin(ctx.method, ctx.req.headers, auth.origin())) {
        throw GatewayErrors.make.cross_origin_session();
      }
      if (cookie) await deps.signOut.endSessionOf(cookie);
      // 303: the browser follows a form POST with a GET (RFC 9110 §15.4.4).
      const location = auth.absolute(auth.safeNext(ctx.query.get('next')));
      return {
        status: 303,
        headers: { location, 'set-cookie': auth.clearedSessionCookie(), 'cache-control': 'no-store' },
      };
    },
    'GET /logout': () => {
      throw GatewayErrors.make.method_not_allowed({ allowed: ['POST'] });
    },
  };
  pages['HEAD /login'] = pages['GET /login'] as (typeof pages)[string];
  const operatorConsole = consoleHandler({
    home: () => ({ clusterName: deps.clusterName, origin: auth.origin(), prefixes: deps.prefixes() }),
    upstreamOwnsRoot: upstream !== null,
  });
  return {
    service: 'frontend',
    // Bearer only: the frontend upstream is told who calls only by a credential a page sent on purpose, never by a
    // cookie any same-site page can make a browser attach. /login asks about the cookie itself (below).
    auth: 'optional',
    handle(ctx) {
      const page = pages[`${ctx.method} ${ctx.rest}`];
      if (page) return page(ctx);
      const consolePage = operatorConsole(ctx);
      if (consolePage) return consolePage;
      if (upstream) return forward(ctx, upstream, ctx.rest, auth.originUrl(), ctx.principal);
      throw GatewayErrors.make.route_not_found();
    },
  };
}

/** An operator upstream (the frontend, notebooks, admin compute): one replica, the gateway's defaults. */
function operatorSpec(label: string, upstream: string, prefix: string, timeoutMs: number): TargetSpec {
  return {
    label,
    replicas: [{ url: upstream, weight: 1 }],
    maxConcurrent: null,
    queueTimeoutMs: null,
    prefix,
    stripPrefix: true,
    timeoutMs,
    forwardAuthorization: false,
    retries: DEFAULT_RETRIES,
    affinity: false,
    rateLimit: null,
  };
}

/** `/notebooks` (any local user) and `/admin/compute` (native administrators), proxied to operator upstreams. */
export function operatorMount(
  service: string,
  upstream: string | null,
  adminOnly: boolean,
  deps: FrontendDeps,
): ServiceMount {
  const targets = new Map<string, ProxyTarget>();
  const targetFor = (prefix: string): ProxyTarget => {
    if (!upstream) throw ServingErrors.make.upstream_not_configured({ service });
    let target = targets.get(prefix);
    if (!target) {
      target = buildTarget(deps.planes, operatorSpec(service, upstream, prefix, deps.timeoutMs));
      targets.set(prefix, target);
    }
    return target;
  };
  const gate = (principal: Principal | null): void => {
    if (principal?.source === 'mesh') throw GatewayErrors.make.endpoint_requires_native_realm();
    if (adminOnly && !isNativeAdmin(principal)) throw GatewayErrors.make.admin_required();
  };
  /** On an open exchange: the credential the request presented must still authenticate as the same user, and pass. */
  const stillAllowed = (ctx: RequestContext, principal: Principal) => async () => {
    const again = await deps.auth.current(ctx);
    if (again?.userId !== principal.userId) return false;
    gate(again);
    return true;
  };
  // The service table reports rest '/' for the bare prefix too; tell the two apart by the raw path.
  const split = (ctx: RequestContext) =>
    ctx.rawPath.endsWith(ctx.rest)
      ? { prefix: ctx.rawPath.slice(0, ctx.rawPath.length - ctx.rest.length), below: ctx.rest }
      : { prefix: ctx.rawPath, below: '' };
  return {
    service,
    auth: 'optional',
    browserSession: true,
    handle(ctx) {
      const { principal } = ctx;
      if (!principal) return deps.auth.unauthenticated(ctx);
      gate(principal);
      const { prefix, below } = split(ctx);
      if (below === '') return slashRedirect(ctx);
      deps.streams.track(responseStream(ctx.res), stillAllowed(ctx, principal));
      return forward(ctx, targetFor(prefix), below, deps.auth.originUrl(), principal);
    },
    async upgrade(ctx, socket: Duplex, head: Buffer) {
      const { principal } = ctx;
      if (!principal) throw deps.auth.refusal(ctx);
      gate(principal);
      const { prefix, below } = split(ctx);
      await proxyUpgrade(ctx, socket, head, targetFor(prefix), below, deps.auth.originUrl(), principal, {
        streams: deps.streams,
        stillAllowed: stillAllowed(ctx, principal),
      });
    },
  };
}
