/** Runs the prelude stages, then the matched route's compiled stages; one catch for all. */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { NodeRequest, NodeResponse, RequestContext } from '../http/context.ts';
import { sendError } from '../http/respond.ts';
import { NO_SPAN } from '../observability/tracing.ts';
import type { Stage } from './stage.ts';

/** `onArrival` runs synchronously before any stage, while no body byte has been read yet (mesh body digest). */
export function createPipeline(prelude: readonly Stage[], logger: Logger, onArrival?: (req: NodeRequest) => void) {
  return async function handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    onArrival?.(req);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const ctx: RequestContext = {
      requestId: randomUUID(),
      req,
      res,
      method: (req.method ?? 'GET').toUpperCase(),
      rawPath: q === -1 ? url : url.slice(0, q),
      query: new URLSearchParams(q === -1 ? '' : url.slice(q + 1)),
      startedAt: process.hrtime.bigint(),
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
    };
    try {
      // Most stages answer synchronously; awaiting a plain value still costs a microtask
      // turn, so only promises are awaited (eight stages per runtime request; bench/README.md, proxy).
      for (const stage of prelude) {
        const result = stage.run(ctx);
        if ((typeof result === 'string' ? result : await result) === 'done') return;
      }
      for (const stage of ctx.route?.stages ?? []) {
        const result = stage.run(ctx);
        if ((typeof result === 'string' ? result : await result) === 'done') return;
      }
    } catch (error) {
      sendError(ctx, error);
    }
  };
}
