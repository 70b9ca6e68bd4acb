/**
 * The runtime proxy's hot path: a caller's rate limit (rate-limit.ts), its fair share of the deployment
 * (fair-share.ts), then the exchange with the replicas (exchange.ts) through undici's low-level dispatch API on
 * keep-alive pools, so bytes flow both ways without buffering and with backpressure.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { ApiError } from '../../gateway/errors/api-error.ts';
import { clientKey } from '../../gateway/http/client-key.ts';
import type { NodeRequest, NodeResponse, Reply, RequestContext } from '../../gateway/http/context.ts';
import { onResponseClose } from '../../gateway/http/response-close.ts';
import { type Span, SpanKind } from '../../gateway/observability/tracing.ts';
import type { Principal } from '../../gateway/principal.ts';
import { replicaPathMap } from './balancer.ts';
import { Exchange } from './exchange.ts';
import type { AdmissionGate } from './fair-share.ts';
import { type PathMap, upstreamRequestHeaders } from './headers.ts';
import type { DataPlanes, Plane, PlaneSpec } from './plane.ts';
import type { ProxyObservability } from './proxy-metrics.ts';
import type { RateLimiter } from './rate-limit.ts';
import { idempotent, KEPT_BODY_BYTES } from './retry.ts';
import type { RateLimitRecord } from './schema.ts';
import type { MinuteSeries } from './series.ts';
import type { RequestCell } from './traffic.ts';

/** Where one request goes: a deployment's plane (replicas, gate, budget), its path mapping and options. */
export interface ProxyTarget {
  plane: Plane;
  /** Each replica's path mapping under this target's prefix, by replica index. */
  maps: readonly PathMap[];
  prefix: string;
  timeoutMs: number;
  forwardAuthorization: boolean;
  /** Deployment id or service name, for error bodies and logs. */
  label: string;
  /** Further attempts after a failure that is safe to retry. */
  retries: number;
  /** Cookie affinity: the affinity cookie names this deployment's replica, by index. */
  affinity: boolean;
  rateLimit: { limiter: RateLimiter; limit: RateLimitRecord } | null;
  observed: ProxyObservability;
  series: MinuteSeries;
  /** This deployment's request count (traffic.ts): one increment per request. */
  requests: RequestCell;
  /** The proxy span's attributes, the same for every request to this target. */
  spanAttributes: { 'meshgate.deployment': string };
}

export interface TargetSpec extends PlaneSpec {
  prefix: string;
  stripPrefix: boolean;
  timeoutMs: number;
  forwardAuthorization: boolean;
  retries: number;
  affinity: boolean;
  rateLimit: RateLimitRecord | null;
}

export function buildTarget(planes: DataPlanes, spec: TargetSpec, limiter: RateLimiter | null = null): ProxyTarget {
  const plane = planes.plane(spec);
  return {
    plane,
    maps: plane.balancer.replicas.map((r) => replicaPathMap(r, spec.prefix, spec.stripPrefix)),
    prefix: spec.prefix,
    timeoutMs: spec.timeoutMs,
    forwardAuthorization: spec.forwardAuthorization,
    label: spec.label,
    retries: spec.retries,
    affinity: spec.affinity,
    rateLimit: spec.rateLimit && limiter ? { limiter, limit: spec.rateLimit } : null,
    observed: planes.observed,
    series: planes.series,
    requests: planes.observed.requests.cell(spec.label),
    spanAttributes: { 'meshgate.deployment': spec.label },
  };
}

/** The configured origin's host and port, read once per URL: each read of a URL's parts builds its strings anew. */
const originParts = new WeakMap<URL, { host: string; port: string }>();

function partsOf(origin: URL): { host: string; port: string } {
  let parts = originParts.get(origin);
  if (!parts) {
    parts = { host: origin.host, port: origin.port || (origin.protocol === 'https:' ? '443' : '80') };
    originParts.set(origin, parts);
  }
  return parts;
}

export function forwardFacts(
  ctx: Pick<RequestContext, 'req' | 'requestId'>,
  target: Pick<ProxyTarget, 'prefix' | 'forwardAuthorization'>,
  origin: URL,
  principal: Principal | null,
) {
  const secure = (ctx.req.socket as TLSSocket).encrypted === true;
  const { host, port } = partsOf(origin);
  return {
    clientIp: ctx.req.socket.remoteAddress ?? '',
    proto: secure ? ('https' as const) : ('http' as const),
    originHost: host,
    originPort: port,
    prefix: target.prefix,
    requestId: ctx.requestId,
    forwardAuthorization: target.forwardAuthorization,
    user: principal ? { username: principal.username, attributes: principal.attributes } : null,
  };
}

/** A deployment's root without its slash: relative links in an app resolve against the directory, so add it. */
export function slashRedirect(ctx: Pick<RequestContext, 'rawPath' | 'query'>): Reply {
  const query = ctx.query.size > 0 ? `?${ctx.query}` : '';
  return { status: 308, headers: { location: `${ctx.rawPath}/${query}` } };
}

/** Whether the response closed already: HTTP/1.1's says so itself, HTTP/2's compatibility one by its stream. */
function closedAlready(res: NodeResponse): boolean {
  return 'stream' in res ? res.stream.destroyed : res.closed;
}

/** Has the request a body to stream? h2 says so with END_STREAM; h1 with a length or chunked coding. */
function hasBody(req: NodeRequest, headers: IncomingHttpHeaders): boolean {
  if (req.httpVersionMajor === 2) return !(req as Http2ServerRequest).stream.endAfterHeaders;
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * Each principal's caller key, built once: the verified-token cache hands the same principal to every request of a
 * credential, and a key built per request was a string to allocate, and hash again for the fair share's lookup.
 */
const userKeys = new WeakMap<Principal, string>();

/** Who a request counts against, for the fair share and the rate limit: the user, else the client address. */
export function callerKey(req: NodeRequest, principal: Principal | null): string {
  if (!principal) return `addr:${clientKey(req.socket?.remoteAddress)}`;
  let key = userKeys.get(principal);
  if (key === undefined) {
    key = `user:${principal.source}:${principal.userId}`;
    userKeys.set(principal, key);
  }
  return key;
}

/**
 * Streams the request to the target and the answer back within the caller's rate limit and fair share.
 * Not an async function: a request admitted at once (most) costs one promise, the stream's own.
 */
export function forward(
  ctx: RequestContext,
  target: ProxyTarget,
  rest: string,
  origin: URL,
  principal: Principal | null,
): Promise<undefined> {
  const caller = callerKey(ctx.req, principal);
  if (target.rateLimit) {
    const refusal = target.rateLimit.limiter.take(target.label, caller, target.rateLimit.limit);
    if (refusal) return Promise.reject(counted(target, refusal));
  }
  let slot: ReturnType<AdmissionGate['acquire']>;
  try {
    slot = target.plane.gate.acquire(caller, ctx.res);
  } catch (error) {
    return Promise.reject(error);
  }
  if (typeof slot === 'function') return forwardWithin(slot, ctx, target, rest, origin, principal);
  // Null: the client left while waiting for its slot.
  return slot.then(
    (release) => (release ? forwardWithin(release, ctx, target, rest, origin, principal) : undefined),
    (refusal: ApiError) => Promise.reject(counted(target, refusal, target.plane.gate.queueTimeoutMs)),
  );
}

/** Counts a refusal under its reason (upstream_errors_total) and in the minute's series, and passes it on. */
function counted(target: ProxyTarget, refusal: ApiError, waitedMs = 0): ApiError {
  target.observed.errors.labels(target.label, refusal.reason).inc();
  target.series.record(target.label, refusal.status, waitedMs);
  return refusal;
}

/**
 * `release` gives the slot and the in-flight count back (AdmissionGate), and only its first call counts: the stream's
 * end and a failure before it may both call it.
 */
function forwardWithin(
  release: () => void,
  ctx: RequestContext,
  target: ProxyTarget,
  rest: string,
  origin: URL,
  principal: Principal | null,
): Promise<undefined> {
  target.requests.total++;
  const tracing = target.observed.tracing;
  // Not recording, the proxy's span is the request's own (Tracing.child) and nothing ends it: no closure for inSpan.
  if (!tracing.recording)
    return exchange(ctx, target, rest, origin, principal, tracing.child('proxy', ctx.span), release);
  let streamed: Promise<undefined>;
  try {
    streamed = tracing.inSpan(
      'proxy',
      ctx.span,
      (span) => exchange(ctx, target, rest, origin, principal, span, release),
      SpanKind.CLIENT,
      target.spanAttributes,
    );
  } catch (error) {
    release();
    throw error;
  }
  // Recording spans, inSpan is an async function: what fails before the stream begins (the span itself) is a
  // rejection, not a throw, and must give the slot back too.
  return streamed.catch((error: unknown) => {
    release();
    throw error;
  });
}

/**
 * The request's body as the attempts send it: none, the client's stream, or (an idempotent request's small body)
 * kept in memory so that it can be sent again.
 */
function requestBody(ctx: RequestContext): null | NodeRequest | Promise<Buffer | NodeRequest> {
  if (!hasBody(ctx.req, ctx.req.headers)) return null;
  const length = Number(ctx.req.headers['content-length'] ?? Number.NaN);
  if (!idempotent(ctx.method) || !(length <= KEPT_BODY_BYTES)) return ctx.req;
  return kept(ctx.req);
}

async function kept(body: NodeRequest): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Sends the request to a replica and the answer back, again to another replica when a failure allows (retry.ts);
 * resolves when done, rejects only before the head. `settled` (the slot's release) runs as the promise settles; only
 * its first call counts.
 */
function exchange(
  ctx: RequestContext,
  target: ProxyTarget,
  rest: string,
  origin: URL,
  principal: Principal | null,
  span: Span,
  settled: () => void,
): Promise<undefined> {
  return new Promise((resolve, reject) => {
    // Everything inside the try: whatever throws before the request is under way gives the slot back.
    try {
      const headers = upstreamRequestHeaders(ctx.req.headers, forwardFacts(ctx, target, origin, principal));
      // The upstream continues this hop's trace: its parent is the proxy span, never what the client sent.
      const trace = target.observed.tracing.headersFor(span);
      for (const name in trace) headers[name] = trace[name] as string;
      const body = requestBody(ctx);
      const request = { rest, method: ctx.method, headers, body: null as Buffer | NodeRequest | null };
      if (body instanceof Promise) {
        const failed = (error: unknown) => {
          settled();
          reject(error);
        };
        body.then((sent) => {
          try {
            begin(new Exchange(ctx, target, { ...request, body: sent }, resolve, reject, settled));
          } catch (error) {
            failed(error);
          }
        }, failed);
      } else {
        request.body = body;
        begin(new Exchange(ctx, target, request, resolve, reject, settled));
      }
    } catch (error) {
      settled();
      reject(error);
    }
  });
}

/** Starts the exchange's first attempt, unless its client left already. */
function begin(run: Exchange): void {
  const res = run.ctx.res;
  // Told by the request's one close listener (no listener, closure or once wrapper of its own).
  onResponseClose(run.ctx, run);
  // A client that left while the request waited (its credential verified, its slot queued) sent its close
  // already: none is coming, so the request ends here rather than hold an upstream it cannot answer.
  if (closedAlready(res)) run.clientClosed();
  else run.attempt();
}
