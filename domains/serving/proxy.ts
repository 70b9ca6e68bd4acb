/**
 * The runtime proxy's hot path: one keep-alive undici Pool per
 * upstream origin and the low-level dispatch API, so bytes flow both ways
 * without buffering and with backpressure (the measurements put
 * undici's streaming API at ~2× the RPS of http-proxy-3 at half the CPU).
 * Failures before the response head become 502/503/504 with stable reasons;
 * after it, the client stream is aborted, the only honest signal left.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { type Dispatcher, Pool } from 'undici';
import type { ApiError } from '../../gateway/errors/api-error.ts';
import type { NodeRequest, NodeResponse, Reply, RequestContext, RequestQuery } from '../../gateway/http/context.ts';
import { type Span, SpanKind } from '../../gateway/observability/tracing.ts';
import type { Principal } from '../../gateway/principal.ts';
import { ServingErrors } from './errors.ts';
import { ClientShares } from './fair-share.ts';
import { downstreamResponseHeaders, type PathMap, upstreamRequestHeaders } from './headers.ts';
import type { ProxyObservability } from './proxy-metrics.ts';
import type { RequestCell } from './traffic.ts';

/** Where one request goes: an upstream pool plus the path mapping and per-deployment options. */
export interface ProxyTarget extends PathMap {
  pool: Pool;
  timeoutMs: number;
  forwardAuthorization: boolean;
  /** Deployment id or service name, for error bodies and logs. */
  label: string;
  shares: ClientShares;
  observed: ProxyObservability;
  /** This deployment's in-flight gauge, labelled once rather than per request. */
  inFlight: { inc(): void; dec(): void };
  /** This deployment's request count (traffic.ts): one increment per request. */
  requests: RequestCell;
  /** The proxy span's attributes, the same for every request to this target. */
  spanAttributes: { 'meshgate.deployment': string };
}

/** Lazily created keep-alive pools, one per upstream origin, closed with the domain. */
export class UpstreamPools {
  readonly #pools = new Map<string, { pool: Pool; label: string }>();
  readonly shares: ClientShares;
  readonly observed: ProxyObservability;

  constructor(
    private readonly connections: number,
    shares: { perConnection: number; perAddress: number },
    observe: (pools: () => Iterable<[Pool, string]>) => ProxyObservability,
  ) {
    this.shares = new ClientShares(shares.perConnection, shares.perAddress);
    this.observed = observe(() => [...this.#pools.values()].map(({ pool, label }) => [pool, label]));
  }

  /** The pool of `origin`; `label` names it in the metrics when this call creates it. */
  get(origin: string, label: string): Pool {
    let entry = this.#pools.get(origin);
    if (!entry) {
      const pool = new Pool(origin, {
        connections: this.connections,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connect: { timeout: 10_000 },
      });
      entry = { pool, label };
      this.#pools.set(origin, entry);
    }
    return entry.pool;
  }

  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.pool.destroy()));
  }
}

export interface TargetSpec {
  upstream: string;
  prefix: string;
  stripPrefix: boolean;
  timeoutMs: number;
  forwardAuthorization: boolean;
  label: string;
}

export function buildTarget(pools: UpstreamPools, spec: TargetSpec): ProxyTarget {
  const url = new URL(spec.upstream);
  return {
    pool: pools.get(url.origin, spec.label),
    upstreamOrigin: url.origin,
    basePath: url.pathname.replace(/\/+$/, ''),
    prefix: spec.prefix,
    stripPrefix: spec.stripPrefix,
    timeoutMs: spec.timeoutMs,
    forwardAuthorization: spec.forwardAuthorization,
    label: spec.label,
    shares: pools.shares,
    observed: pools.observed,
    inFlight: pools.observed.inFlight.labels(spec.label),
    requests: pools.observed.requests.cell(spec.label),
    spanAttributes: { 'meshgate.deployment': spec.label },
  };
}

/** The path (with query) the upstream sees for `rest` below the public prefix. */
export function upstreamPath(target: PathMap, rest: string, query: RequestQuery | string): string {
  const path = target.stripPrefix ? `${target.basePath}${rest || '/'}` : `${target.basePath}${target.prefix}${rest}`;
  const q = String(query);
  return q ? `${path}?${q}` : path;
}

export function forwardFacts(
  ctx: Pick<RequestContext, 'req' | 'requestId'>,
  target: ProxyTarget,
  origin: URL,
  principal: Principal | null,
) {
  const secure = (ctx.req.socket as TLSSocket).encrypted === true;
  return {
    clientIp: ctx.req.socket.remoteAddress ?? '',
    proto: secure ? ('https' as const) : ('http' as const),
    originHost: origin.host,
    originPort: origin.port || (origin.protocol === 'https:' ? '443' : '80'),
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
 * Streams the request to the target and the answer back within the client connection's fair share of the pool.
 * Not an async function: a request admitted at once (most) costs one promise, the stream's own.
 */
export function forward(
  ctx: RequestContext,
  target: ProxyTarget,
  rest: string,
  origin: URL,
  principal: Principal | null,
): Promise<undefined> {
  const share = target.shares.acquire(ctx.req, ctx.res, target.pool);
  if (typeof share === 'function') return forwardWithin(share, ctx, target, rest, origin, principal);
  // Null: the client left while waiting for its share.
  return Promise.resolve(share).then((release) =>
    release ? forwardWithin(release, ctx, target, rest, origin, principal) : undefined,
  );
}

function forwardWithin(
  release: () => void,
  ctx: RequestContext,
  target: ProxyTarget,
  rest: string,
  origin: URL,
  principal: Principal | null,
): Promise<undefined> {
  target.requests.total++;
  target.inFlight.inc();
  let released = false;
  const settled = () => {
    if (released) return;
    released = true;
    target.inFlight.dec();
    release();
  };
  const tracing = target.observed.tracing;
  let streamed: Promise<undefined>;
  try {
    streamed = tracing.inSpan(
      'proxy',
      ctx.span,
      (span) => stream(ctx, target, rest, origin, principal, span, settled),
      SpanKind.CLIENT,
      target.spanAttributes,
    );
  } catch (error) {
    settled();
    throw error;
  }
  // Recording spans, inSpan is an async function: what fails before the stream begins (the span itself) is a
  // rejection, not a throw, and must give the share back too.
  return tracing.recording
    ? streamed.catch((error: unknown) => {
        settled();
        throw error;
      })
    : streamed;
}

/**
 * Streams the request to the target and the answer back; resolves when done, rejects only before the head.
 * `settled` runs once, as the promise settles: the share and the in-flight count are given back.
 */
function stream(
  ctx: RequestContext,
  target: ProxyTarget,
  rest: string,
  origin: URL,
  principal: Principal | null,
  span: Span,
  settled: () => void,
): Promise<undefined> {
  return new Promise((resolve, reject) => {
    // Everything inside the try: whatever throws before the request is under way gives the share back.
    try {
      const headers = upstreamRequestHeaders(ctx.req.headers, forwardFacts(ctx, target, origin, principal));
      // The upstream continues this hop's trace: its parent is the proxy span, never what the client sent.
      Object.assign(headers, target.observed.tracing.headersFor(span));
      const handler = new ResponsePump(ctx, target, resolve, reject, settled);
      // `on`: a response closes once (no once wrapper to allocate and remove per request).
      ctx.res.on('close', () => handler.clientClosed());
      // A client that left while the request waited (its credential verified, its share queued) sent its close
      // already: none is coming, so the request ends here rather than hold an upstream connection it cannot answer.
      if (closedAlready(ctx.res)) {
        handler.clientClosed();
        return;
      }
      target.pool.dispatch(
        {
          path: upstreamPath(target, rest, ctx.query),
          method: ctx.method as Dispatcher.HttpMethod,
          headers,
          body: hasBody(ctx.req, ctx.req.headers) ? ctx.req : null,
          headersTimeout: target.timeoutMs,
          bodyTimeout: target.timeoutMs,
        },
        handler,
      );
    } catch (error) {
      settled();
      reject(error);
    }
  });
}

/**
 * Copies one upstream response into the client response, pausing the upstream when the client is slow. Counts, for
 * the access line, the body bytes each way and how long the upstream took (dispatch until its answer ended or failed).
 */
class ResponsePump implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | null = null;
  #done = false;
  #paused = false;
  readonly #dispatchedAt = performance.now();
  private readonly res: ServerResponse;

  constructor(
    private readonly ctx: RequestContext,
    private readonly target: ProxyTarget,
    private readonly resolve: (value: undefined) => void,
    private readonly reject: (error: ApiError) => void,
    private readonly settled: () => void,
  ) {
    this.res = ctx.res as ServerResponse;
    ctx.requestBytes = 0;
    ctx.responseBytes = 0;
  }

  /** undici reports each request body chunk as written to the upstream. */
  onBodySent(chunk: Buffer | string): void {
    this.ctx.requestBytes += chunk.length;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#done) controller.abort(new Error('client closed'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx informational: node writes its own 100-continue
    this.res.writeHead(statusCode, downstreamResponseHeaders(headers, this.target));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.ctx.responseBytes += chunk.length;
    if (!this.res.write(chunk) && !this.#paused) {
      this.#paused = true;
      controller.pause();
      // Created only when the client is slow: a per-request closure field costs every request.
      this.res.once('drain', () => {
        this.#paused = false;
        this.#controller?.resume();
      });
    }
  }

  onResponseEnd(): void {
    this.#done = true;
    this.res.end();
    this.#settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.#done) return;
    this.#done = true;
    if (this.res.headersSent) {
      this.target.observed.errors.labels(this.target.label, 'stream_aborted').inc();
      this.res.destroy();
      this.#settle();
    } else {
      const refusal = upstreamError(error, this.target.label);
      this.target.observed.errors.labels(this.target.label, refusal.reason).inc();
      this.#settle(refusal);
    }
  }

  /** The client went away: stop reading from the upstream (frees the pooled connection). */
  clientClosed(): void {
    if (this.#done) return;
    this.#done = true;
    this.#controller?.abort(new Error('client closed'));
    this.#settle();
  }

  /** Every end goes through here: the share and the in-flight count first, then the stream's promise. */
  #settle(refusal?: ApiError): void {
    this.ctx.upstreamMs = performance.now() - this.#dispatchedAt;
    this.settled();
    if (refusal) this.reject(refusal);
    else this.resolve(undefined);
  }
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNRESET',
  'EPIPE',
]);
const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);
const CLOSING = new Set(['UND_ERR_DESTROYED', 'UND_ERR_CLOSED']);

/** Classifies an upstream failure by its undici or Node error code; the cause is kept for the log, never the body. */
export function upstreamError(error: Error, label: string): ApiError {
  const code = (error as { code?: string }).code ?? '';
  const extra = { upstream: label };
  if (TIMEOUTS.has(code) || error.name === 'TimeoutError') return ServingErrors.make.upstream_timeout(extra, error);
  if (CLOSING.has(code)) return ServingErrors.make.upstream_unavailable(extra, error);
  if (UNREACHABLE.has(code)) return ServingErrors.make.upstream_unreachable(extra, error);
  return ServingErrors.make.upstream_bad_response(extra, error);
}
