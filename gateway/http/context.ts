/**
 * The typed per-request object every stage and handler sees:
 * an explicit field set, no symbol-keyed bags on req/res. Requests may be
 * HTTP/1.1 or HTTP/2 (the TLS listener allows both), so req/res are unions.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Span } from '../observability/tracing.ts';
import type { Principal } from '../principal.ts';
import type { CompiledRoute } from '../routing/router.ts';
import type { CloseHook } from './response-close.ts';

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

export interface RequestContext {
  readonly requestId: string;
  readonly req: NodeRequest;
  readonly res: NodeResponse;
  readonly method: string;
  /** Path exactly as received (still percent-encoded), without the query. */
  readonly rawPath: string;
  readonly query: RequestQuery;
  /** `performance.now()` at arrival: milliseconds, sub-millisecond precise, no allocation (a bigint is one). */
  readonly startedAt: number;
  readonly logger: Logger;
  /** Set by canonicalPath: the path holds %2F, allowed only on URN routes. */
  hasEncodedSlash: boolean;
  /** Set by routeMatch. */
  route: CompiledRoute | null;
  /** Service the path belongs to (api, models, apps, ...), set by routeMatch. */
  service: string | null;
  /** Path below the service prefix (raw), set by routeMatch. */
  rest: string;
  params: Record<string, string>;
  /** Set by authenticate; null for anonymous routes. */
  principal: Principal | null;
  /** Raw bearer credential presented (for mesh egress as the peer token). */
  bearer: string | null;
  /** This request's span (accessLog begins it): the parent of its proxy, mesh and job spans, and of the next hop. */
  span: Span;
  /** Set by meshVerify for a signed mesh request: where it came from (the principal is the brokered user). */
  meshPeer: MeshInbound | null;
  /** The registered deployment (its id) the request was admitted to, set by the domain that resolved it. */
  deployment: string | null;
  /** Milliseconds the upstream took, dispatch until its answer ended or failed: -1 unless proxied. */
  upstreamMs: number;
  /** Body bytes relayed to the upstream, and back to the client: -1 where nothing counted them (not proxied). */
  requestBytes: number;
  responseBytes: number;
  /** The stable reason of the ApiError the request was answered with (sendError), null for an answer. */
  failure: string | null;
  /**
   * Why a presented session cookie was set aside (its refusal's reason) on a route where a stale cookie counts as no
   * credential: the 401 the route may then answer is counted under it. Null otherwise.
   */
  credentialRefused: string | null;
  /** A websocket upgrade's connection and the bytes read past its head; null for a request. */
  readonly upgrade: UpgradeSocket | null;
  /** What the response's one close listener tells besides the access line, in order (http/response-close.ts). */
  closeHooks: CloseHook[] | null;
  /** That listener is registered. */
  closeWatched: boolean;
}

/**
 * An HTTP/1.1 Upgrade request's connection (RFC 9110 §7.8). Its `res` is a response on that connection: a refusal
 * is written there like any answer and ends it; the mount's hook writes the 101 there and keeps the connection.
 */
export interface UpgradeSocket {
  readonly socket: Duplex;
  readonly head: Buffer;
}

/** A verified inbound mesh hop. */
export interface MeshInbound {
  readonly federationId: string;
  readonly sourceClusterId: string;
  /** The route trace as received (the source appended itself last). */
  readonly route: readonly string[];
  readonly correlationId: string | null;
}

/** What a handler returns; `undefined` means it wrote the response itself (streams, proxies). */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * The caller of a route whose auth mode is 'user' or 'admin': authenticate
 * (or meshVerify) ran, so a principal is present; its absence is a wiring
 * bug (the route declared 'none' or 'optional'), never a client error.
 */
export function principalOf(ctx: RequestContext): Principal {
  if (!ctx.principal) throw new Error(`route ${ctx.method} ${ctx.rawPath} ran without a principal`);
  return ctx.principal;
}

/** A request's query, read-only: one instance may be shared by many requests (NO_QUERY), so none may change it. */
export type RequestQuery = Omit<URLSearchParams, 'append' | 'delete' | 'set' | 'sort'>;

/**
 * The query of a request that has none, shared by all of them (most requests; no parse, no allocation). Read-only:
 * the mutators throw, so no handler can change what another request sees.
 */
class EmptyQuery extends URLSearchParams {
  override append(): never {
    throw new TypeError('the request query is read-only');
  }
  override delete(): never {
    throw new TypeError('the request query is read-only');
  }
  override set(): never {
    throw new TypeError('the request query is read-only');
  }
  override sort(): never {
    throw new TypeError('the request query is read-only');
  }
}
export const NO_QUERY: RequestQuery = new EmptyQuery();

/** The query of `target`, whose `?` is at `q`: an empty one (`/path?`) is the shared NO_QUERY too. */
export function queryOf(target: string, q: number): RequestQuery {
  return q === -1 || q === target.length - 1 ? NO_QUERY : new URLSearchParams(target.slice(q + 1));
}
