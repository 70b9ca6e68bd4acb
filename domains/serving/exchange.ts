/**
 * One proxied request's way through a deployment's replicas: an attempt on the replica the balancer picks, another
 * on a different one when the failure allows it (retry.ts) and the budget has room, then the answer copied to the
 * client with backpressure. Each attempt's outcome feeds the replica's outlier detection (balancer.ts). Failures
 * before the response head become 502/503/504 with stable reasons; after it, the client stream is aborted, the
 * only honest signal left.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { ApiError } from '../../gateway/errors/api-error.ts';
import type { RequestContext, RequestQuery } from '../../gateway/http/context.ts';
import type { CloseHook } from '../../gateway/http/response-close.ts';
import { classifyTransportError, type TransportPhase } from '../../gateway/mesh/transport-errors.ts';
import type { FailureKind, Replica } from './balancer.ts';
import { ServingErrors } from './errors.ts';
import { AFFINITY_COOKIE, downstreamResponseHeaders, type PathMap } from './headers.ts';
import type { ProxyTarget } from './proxy.ts';
import { mayRetry } from './retry.ts';

/** The parts of an upstream request every attempt shares; the path is the replica's. */
export interface UpstreamRequest {
  rest: string;
  method: string;
  headers: Record<string, string | string[]>;
  body: Buffer | Readable | null;
}

/** The path (with query) the upstream sees for `rest` below the public prefix. */
export function upstreamPath(target: PathMap, rest: string, query: RequestQuery | string): string {
  const path = target.stripPrefix ? `${target.basePath}${rest || '/'}` : `${target.basePath}${target.prefix}${rest}`;
  const q = String(query);
  return q ? `${path}?${q}` : path;
}

/** Classifies an upstream failure (gateway/mesh/transport-errors.ts); the cause is kept for the log, never the body. */
export function upstreamError(error: Error, label: string): ApiError {
  const failure = classifyTransportError(error);
  const extra = { upstream: label };
  if (failure.status === 504) return ServingErrors.make.upstream_timeout(extra, error);
  if (failure.phase === 'closed') return ServingErrors.make.upstream_unavailable(extra, error);
  if (failure.phase === 'connect' || failure.phase === 'reset')
    return ServingErrors.make.upstream_unreachable(extra, error);
  return ServingErrors.make.upstream_bad_response(extra, error);
}

/** What a transport failure counts as for outlier detection; null: it says nothing of the replica. */
function outlierKind(phase: TransportPhase): FailureKind | null {
  if (phase === 'connect') return 'connect';
  if (phase === 'reset' || phase === 'dropped') return 'reset';
  return phase === 'exchange' ? 'status' : null;
}

/**
 * The replica a request's affinity cookie names, when the target keeps affinity and the value is one of its
 * replicas' indexes; anything else names none (and the balancer picks).
 */
export function pinnedReplica(cookie: string | undefined, target: ProxyTarget): Replica | null {
  if (!target.affinity) return null;
  const replicas = target.plane.balancer.replicas;
  const at = cookie?.indexOf(`${AFFINITY_COOKIE}=`) ?? -1;
  if (at < 0) return null;
  const value = /^\d{1,2}(?=;|\s|$)/.exec((cookie as string).slice(at + AFFINITY_COOKIE.length + 1));
  return value ? (replicas[Number(value[0])] ?? null) : null;
}

/**
 * Node's HTTP/1.1 response holds a written head until the body's first bytes, to send both in one write (its HTTP/2
 * one sends it at once). An upstream that sends its head before its first bytes (a model's stream before its first
 * token) would leave the client waiting for a head the gateway has: once what undici read with the head has been
 * passed on (the same read usually holds the first bytes too), a head with no body behind it yet goes alone.
 */
function sendHeadAlone(run: Exchange): void {
  if (!run.done && run.ctx.responseBytes === 0) run.res.flushHeaders();
}

export class Exchange implements CloseHook {
  #attempts = 0;
  #tried: Replica[] | null = null;
  #done = false;
  #current: Attempt | null = null;
  readonly #pinned: Replica | null;
  readonly #dispatchedAt = performance.now();
  readonly res: ServerResponse;

  constructor(
    readonly ctx: RequestContext,
    readonly target: ProxyTarget,
    private readonly request: UpstreamRequest,
    private readonly resolve: (value: undefined) => void,
    private readonly reject: (error: ApiError) => void,
    private readonly settled: () => void,
  ) {
    this.res = ctx.res as ServerResponse;
    ctx.requestBytes = 0;
    ctx.responseBytes = 0;
    this.#pinned = pinnedReplica(ctx.req.headers.cookie, target);
    target.plane.budget.request();
  }

  get done(): boolean {
    return this.#done;
  }

  /** Sends the request to the next replica; none in rotation is `no_healthy_upstream`. */
  attempt(): void {
    const balancer = this.target.plane.balancer;
    const replica = balancer.pick(this.#pinned, this.#tried);
    if (!replica) {
      const retryAfter = balancer.backInSeconds();
      this.refuse(ServingErrors.make.no_healthy_upstream({ upstream: this.target.label, retry_after: retryAfter }));
      return;
    }
    this.#attempts++;
    const attempt = new Attempt(this, replica);
    this.#current = attempt;
    replica.outstanding++;
    const { rest, method, headers, body } = this.request;
    replica.pool.dispatch(
      {
        path: upstreamPath(this.target.maps[replica.index] as PathMap, rest, this.ctx.query),
        method: method as Dispatcher.HttpMethod,
        headers,
        body,
        headersTimeout: this.target.timeoutMs,
        bodyTimeout: this.target.timeoutMs,
      },
      attempt,
    );
  }

  /**
   * An attempt failed before the answer's head reached the client: whether it is sent again (the caller then starts
   * the next attempt).
   */
  retriesAfter(attempt: Attempt, failure: TransportPhase | 'status'): boolean {
    if (this.#done || !this.#mayRetry(failure)) return false;
    if (this.#tried) this.#tried.push(attempt.replica);
    else this.#tried = [attempt.replica];
    this.target.observed.retries.labels(this.target.label, failure).inc();
    return true;
  }

  /** Whether a failed attempt is sent again: retries left, the failure allows it, and the budget has room. */
  #mayRetry(failure: TransportPhase | 'status'): boolean {
    if (this.#attempts > this.target.retries) return false;
    const body = this.request.body;
    const replayable = body === null || Buffer.isBuffer(body);
    const untouched = this.ctx.requestBytes === 0 && !(body as Readable | null)?.readableDidRead;
    if (!mayRetry(failure, this.request.method, replayable, untouched)) return false;
    if (this.target.plane.budget.take()) return true;
    this.target.observed.retries.labels(this.target.label, 'budget_exhausted').inc();
    return false;
  }

  /** The answer's head, with the affinity cookie when this replica is not the one the client is pinned to. */
  writeHead(replica: Replica, statusCode: number, headers: IncomingHttpHeaders): void {
    const out = downstreamResponseHeaders(headers, this.target.maps[replica.index] as PathMap);
    // The request id in the head given whole (an upstream's own stays, as it did over the stage's setHeader): Node
    // writes a head given to writeHead alone without merging it field by field (gateway/http/response.ts).
    if (out['x-request-id'] === undefined) out['x-request-id'] = this.ctx.requestId;
    if (this.target.affinity && replica !== this.#pinned) {
      const path = this.target.prefix || '/';
      const cookie = `${AFFINITY_COOKIE}=${replica.index}; Path=${path}; Secure; HttpOnly; SameSite=Lax`;
      const upstreamCookies = out['set-cookie'];
      out['set-cookie'] = upstreamCookies === undefined ? [cookie] : [...(upstreamCookies as string[]), cookie];
    }
    this.res.writeHead(statusCode, out);
    process.nextTick(sendHeadAlone, this);
    this.target.series.record(this.target.label, statusCode, performance.now() - this.#dispatchedAt);
  }

  /**
   * The answer ended (with its trailers, as gRPC sends its status: passed on, HTTP/2 and chunked HTTP/1.1 alike)
   * or failed after its head: the exchange is over.
   */
  finished(error: Error | null, trailers?: IncomingHttpHeaders): void {
    if (this.#done) return;
    this.#done = true;
    if (error) {
      this.target.observed.errors.labels(this.target.label, 'stream_aborted').inc();
      this.res.destroy();
    } else {
      if (trailers && Object.keys(trailers).length > 0) this.res.addTrailers(trailers as Record<string, string>);
      this.res.end();
    }
    this.#settle();
  }

  /** The response closed (http/response-close.ts): over already, or the client went away. */
  responseClosed(): void {
    this.clientClosed();
  }

  /** The client went away: stop the attempt under way (frees the pooled connection). */
  clientClosed(): void {
    if (this.#done) return;
    this.#done = true;
    this.#current?.abort();
    this.#settle();
  }

  refuse(refusal: ApiError): void {
    this.#done = true;
    this.target.observed.errors.labels(this.target.label, refusal.reason).inc();
    this.target.series.record(this.target.label, refusal.status, performance.now() - this.#dispatchedAt);
    this.#settle(refusal);
  }

  /** Every end goes through here: the slot and in-flight count first, then the stream's promise. */
  #settle(refusal?: ApiError): void {
    this.ctx.upstreamMs = performance.now() - this.#dispatchedAt;
    this.settled();
    if (refusal) this.reject(refusal);
    else this.resolve(undefined);
  }
}

/** One attempt on one replica: undici's handler, counting the replica's outstanding requests and its outcome. */
class Attempt implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | null = null;
  /** Abandoned, for a retry or because the client left: undici's further calls are ignored. */
  #dropped = false;
  /** The replica's outstanding count was given back. */
  #released = false;
  /** The outcome was recorded for outlier detection. */
  #recorded = false;
  #paused = false;

  constructor(
    private readonly exchange: Exchange,
    readonly replica: Replica,
  ) {}

  /** undici reports each request body chunk as written to the upstream. */
  onBodySent(chunk: Buffer | string): void {
    this.exchange.ctx.requestBytes += chunk.length;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#dropped) controller.abort(new Error('client closed'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200 || this.#dropped) return; // 1xx informational: node writes its own 100-continue
    const exchange = this.exchange;
    this.#record(statusCode >= 500 ? 'status' : null);
    if ((statusCode === 502 || statusCode === 503) && exchange.retriesAfter(this, 'status')) {
      this.#drop();
      controller.abort(new Error('retried on another replica'));
      exchange.attempt();
      return;
    }
    exchange.writeHead(this.replica, statusCode, headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const res = this.exchange.res;
    this.exchange.ctx.responseBytes += chunk.length;
    if (!res.write(chunk) && !this.#paused) {
      this.#paused = true;
      controller.pause();
      // Created only when the client is slow: a per-request closure field costs every request.
      res.once('drain', () => {
        this.#paused = false;
        this.#controller?.resume();
      });
    }
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    if (this.#dropped) return;
    this.#release();
    this.exchange.finished(null, trailers);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#release();
    if (this.#dropped) return;
    const exchange = this.exchange;
    if (exchange.res.headersSent) {
      exchange.finished(error);
      return;
    }
    const failure = classifyTransportError(error);
    this.#record(outlierKind(failure.phase));
    if (exchange.retriesAfter(this, failure.phase)) exchange.attempt();
    else exchange.refuse(upstreamError(error, exchange.target.label));
  }

  /** The client left: stop this attempt without counting it against the replica. */
  abort(): void {
    if (this.#dropped) return;
    this.#drop();
    this.#controller?.abort(new Error('client closed'));
  }

  #drop(): void {
    this.#dropped = true;
    this.#release();
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    this.replica.outstanding--;
  }

  #record(failure: FailureKind | null): void {
    if (this.#recorded) return;
    this.#recorded = true;
    this.exchange.target.plane.balancer.record(this.replica, failure);
  }
}
