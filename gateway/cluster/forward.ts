/**
 * Asking the node that holds a piece of work: the request is sent on to that node's URL as the caller sent it
 * (method, path, query, body, and the caller's own bearer token, which every node of a cluster verifies), over TLS
 * verified against the cluster CA for the cluster's first hostname, and its answer returned unchanged. The hop is
 * marked, so the receiving node answers itself and a request never travels twice.
 */
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, request } from 'undici';
import { GatewayErrors } from '../errors/gateway-errors.ts';
import type { Reply, RequestContext } from '../http/context.ts';

/** Set on a request one node forwards to another; a node seeing it never forwards the request again. */
export const NODE_HOP_HEADER = 'x-meshgate-node-hop';
/** The answer's headers a forwarded reply keeps. */
const KEPT_HEADERS = ['retry-after'];
/** The headers a streamed answer keeps. */
const STREAM_HEADERS = ['content-type', 'cache-control', 'retry-after', 'x-accel-buffering'];

export interface NodeForwarder {
  /** True when this request already came from another node. */
  forwarded(ctx: RequestContext): boolean;
  forward(ctx: RequestContext, nodeUrl: string, body?: Buffer): Promise<Reply>;
  /**
   * A GET whose answer is a stream (server-sent events), piped to the caller as the node sends it; ends when
   * either side closes. The caller's response is written here.
   */
  stream(ctx: RequestContext, nodeUrl: string): Promise<void>;
  close(): Promise<void>;
}

export function createNodeForwarder(options: { caPem: () => string; servername: string; self: string }): NodeForwarder {
  let agent: Agent | null = null;
  const dispatcher = () => {
    agent ??= new Agent({
      connect: { ca: options.caPem(), servername: options.servername },
      headersTimeout: 15_000,
      bodyTimeout: 30_000,
    });
    return agent;
  };
  return {
    forwarded: (ctx) => ctx.req.headers[NODE_HOP_HEADER] !== undefined,
    async forward(ctx, nodeUrl, body) {
      const url = onNode(nodeUrl, ctx);
      const headers = hopHeaders(ctx, options.self);
      try {
        const answer = await request(url, { method: ctx.req.method as 'GET', headers, body, dispatcher: dispatcher() });
        const text = await answer.body.text();
        const type = String(answer.headers['content-type'] ?? '');
        const kept = Object.fromEntries(
          KEPT_HEADERS.flatMap((name) =>
            typeof answer.headers[name] === 'string' ? [[name, answer.headers[name]]] : [],
          ),
        ) as Record<string, string>;
        return { status: answer.statusCode, body: type.includes('json') ? JSON.parse(text) : text, headers: kept };
      } catch (error) {
        throw GatewayErrors.make.cluster_node_unreachable({}, error);
      }
    },
    async stream(ctx, nodeUrl) {
      const upstream = new AbortController();
      const abort = () => upstream.abort();
      ctx.res.once('close', abort);
      try {
        const answer = await request(onNode(nodeUrl, ctx), {
          headers: hopHeaders(ctx, options.self),
          dispatcher: dispatcher(),
          signal: upstream.signal,
          // An event stream is quiet between events and heartbeats: the caller's close ends it, not a timer.
          bodyTimeout: 0,
        }).catch((error: unknown) => {
          throw GatewayErrors.make.cluster_node_unreachable({}, error);
        });
        const kept = Object.fromEntries(
          STREAM_HEADERS.flatMap((name) =>
            typeof answer.headers[name] === 'string' ? [[name, answer.headers[name]]] : [],
          ),
        );
        // Http2ServerResponse has the same writeHead shape; the union's overloads just do not unify.
        const res = ctx.res as ServerResponse;
        res.writeHead(answer.statusCode, kept);
        // Either side closing ends the pipe; nothing is left to report to a caller whose stream has begun.
        await pipeline(answer.body, res).catch(() => undefined);
      } finally {
        ctx.res.off('close', abort);
      }
    },
    async close() {
      await agent?.close();
    },
  };
}

/** The headers a forwarded request carries: the caller's credentials and content negotiation, and the hop mark. */
function hopHeaders(ctx: RequestContext, self: string): Record<string, string> {
  const headers: Record<string, string> = { [NODE_HOP_HEADER]: self };
  for (const name of ['authorization', 'accept', 'content-type', 'traceparent']) {
    const value = ctx.req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

/**
 * The request's path and query on a node's origin. The path is set, not resolved against the origin: a path the
 * client wrote as `//host/…` would otherwise name another host.
 */
export function onNode(nodeUrl: string, ctx: RequestContext): URL {
  const url = new URL(nodeUrl);
  url.pathname = ctx.rawPath;
  url.search = ctx.query.toString();
  return url;
}
