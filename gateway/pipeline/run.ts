/**
 * Runs a listener's stages, then the matched route's compiled chain; one catch for all. A websocket upgrade runs
 * the same way, on a response bound to its connection (as @fastify/websocket routes upgrades through fastify's own
 * routing), with the route's upgrade chain.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { GatewayErrors } from '../errors/gateway-errors.ts';
import { FoldedWarnings } from '../folded-warnings.ts';
import {
  type NodeRequest,
  type NodeResponse,
  queryOf,
  type RequestContext,
  type UpgradeSocket,
} from '../http/context.ts';
import { sendError } from '../http/respond.ts';
import { RequestIdResponse } from '../http/response.ts';
import { NO_SPAN } from '../observability/tracing.ts';
import type { Stage, StageResult } from './stage.ts';

/** A fresh context: the request line split into path and query, nothing resolved yet. */
function contextOf(req: NodeRequest, res: NodeResponse, logger: Logger, upgrade: UpgradeSocket | null): RequestContext {
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  return {
    requestId: randomUUID(),
    req,
    res,
    method: (req.method ?? 'GET').toUpperCase(),
    rawPath: q === -1 ? target : target.slice(0, q),
    query: queryOf(target, q),
    startedAt: performance.now(),
    logger,
    hasEncodedSlash: false,
    route: null,
    service: null,
    rest: '',
    params: {},
    principal: null,
    bearer: null,
    meshPeer: null,
    span: NO_SPAN,
    deployment: null,
    upstreamMs: -1,
    requestBytes: -1,
    responseBytes: -1,
    failure: null,
    credentialRefused: null,
    upgrade,
    closeHooks: null,
    closeWatched: false,
  };
}

/**
 * Runs `stages` from `from` until one answers 'done'. Most stages answer
 * synchronously; awaiting a plain value still costs a microtask turn, so
 * this stays synchronous until a stage returns a promise (eight stages per
 * runtime request; bench/README.md, proxy).
 */
function runStages(stages: readonly Stage[], ctx: RequestContext, from: number): StageResult | Promise<StageResult> {
  for (let i = from; i < stages.length; i++) {
    const result = (stages[i] as Stage).run(ctx);
    if (typeof result !== 'string') return result.then((r) => (r === 'done' ? r : runStages(stages, ctx, i + 1)));
    if (result === 'done') return result;
  }
  return 'continue';
}

/** The matched route's chain for the exchange; a route without an upgrade chain has nothing to upgrade to. */
function chainOf(ctx: RequestContext): readonly Stage[] {
  if (ctx.upgrade === null) return ctx.route?.stages ?? [];
  const stages = ctx.route?.upgradeStages;
  if (!stages) throw GatewayErrors.make.route_not_found();
  return stages;
}

/** The matched route's stages, after the prelude let the request through; an error thrown or rejected is answered. */
function runRoute(ctx: RequestContext, warnings: FoldedWarnings): void {
  try {
    const routed = runStages(chainOf(ctx), ctx, 0);
    if (typeof routed !== 'string') routed.catch((error: unknown) => sendError(ctx, error, warnings));
  } catch (error) {
    sendError(ctx, error, warnings);
  }
}

export interface PipelineOptions {
  /** Runs synchronously before any stage, while no body byte has been read yet (mesh body digest). */
  onArrival?: ((req: NodeRequest) => void) | undefined;
  /** Where failed requests are warned about; one per gateway, so every listener folds into the same lines. */
  warnings?: FoldedWarnings | undefined;
}

/** A listener's two entry points: its 'request' and its 'upgrade' events. */
export interface Entry {
  request(req: NodeRequest, res: NodeResponse): void;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** Not an async function: a request every stage answers synchronously (most) costs no promise here. */
export function createPipeline(
  prelude: readonly Stage[],
  logger: Logger,
  { onArrival, warnings = new FoldedWarnings() }: PipelineOptions = {},
): Entry {
  function run(req: NodeRequest, res: NodeResponse, upgrade: UpgradeSocket | null): void {
    onArrival?.(req);
    const ctx = contextOf(req, res, logger, upgrade);
    let preluded: StageResult | Promise<StageResult>;
    try {
      preluded = runStages(prelude, ctx, 0);
    } catch (error) {
      sendError(ctx, error, warnings);
      return;
    }
    if (typeof preluded === 'string') {
      if (preluded !== 'done') runRoute(ctx, warnings);
      return;
    }
    preluded.then(
      (result) => (result === 'done' ? undefined : runRoute(ctx, warnings)),
      (error: unknown) => sendError(ctx, error, warnings),
    );
  }
  /** The upgrade on a response bound to its connection; any answer but the mount's 101 ends the connection. */
  function upgradeOn(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const res = new RequestIdResponse(req);
    // The connection's HTTP parser is gone: an answer other than the 101 is its last (RFC 9112 §9.6), and the
    // connection is closed once it is written, whether or not the client closes its side.
    res.shouldKeepAlive = false;
    res.on('finish', () => {
      if (res.statusCode !== 101) socket.end(() => socket.destroy());
    });
    try {
      res.assignSocket(socket);
    } catch (error) {
      logger.warn({ err: error }, 'upgrade not taken: its connection is still answering');
      socket.destroy();
      return;
    }
    run(req, res, { socket, head });
  }
  return {
    request: (req, res) => run(req, res, null),
    upgrade(req, socket, head) {
      socket.on('error', () => socket.destroy());
      // An upgrade pipelined behind an answer still being written waits for it: a connection's answers go out in
      // order (RFC 9112 §9.3.2). Node's server keeps that answer as the socket's `_httpMessage` and detaches it when
      // it finishes, before this listener runs.
      const busy = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
      if (busy && !busy.writableFinished) busy.once('finish', () => upgradeOn(req, socket as Socket, head));
      else upgradeOn(req, socket as Socket, head);
    },
  };
}
