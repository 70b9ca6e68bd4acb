/**
 * Connect-RPC mounting: every HandlerModule.rpc registers into
 * ONE connectNodeAdapter, and paths `/<package>.<Service>/<Method>` of a
 * registered service go to it before the prefix table. The RPC route runs
 * no `authenticate` stage: an RPC authorizes itself (the retrieval stream
 * by its job token). The request id and logger reach
 * the implementation through RPC_CONTEXT.
 */
import { type ConnectRouter, createContextKey, createContextValues } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { Logger } from 'pino';
import type { NodeRequest, RequestContext } from '../http/context.ts';
import type { HandlerInstance } from '../module.ts';
import { createDispatchStage } from '../pipeline/stages/dispatch.ts';
import type { CompiledRoute } from './router.ts';

export interface RpcRequestInfo {
  readonly requestId: string;
  readonly logger: Logger;
}

export const RPC_CONTEXT = createContextKey<RpcRequestInfo | null>(null, { description: 'meshgate request' });

export interface RpcMount {
  /** The compiled route for a raw path, or null when no registered RPC serves it. */
  match(rawPath: string): CompiledRoute | null;
}

export function compileRpc(instances: readonly HandlerInstance[]): RpcMount | null {
  const registrars = instances.flatMap((i) => (i.rpc ? [i.rpc.bind(i)] : []));
  if (registrars.length === 0) return null;
  const contexts = new WeakMap<NodeRequest, RpcRequestInfo>();
  const services = new Set<string>();
  const adapter = connectNodeAdapter({
    routes(router: ConnectRouter) {
      for (const register of registrars) register(router);
      for (const handler of router.handlers) services.add(handler.service.typeName);
    },
    contextValues: (req) => createContextValues().set(RPC_CONTEXT, contexts.get(req) ?? null),
  });
  const handle = (ctx: RequestContext) => {
    contexts.set(ctx.req, { requestId: ctx.requestId, logger: ctx.logger });
    adapter(ctx.req, ctx.res);
    return undefined;
  };
  const route: CompiledRoute = {
    def: { method: 'POST', path: '/', auth: 'none', handle },
    segments: [],
    stages: [createDispatchStage(handle)],
  };
  return {
    match(rawPath) {
      const second = rawPath.indexOf('/', 1);
      return second > 1 && services.has(rawPath.slice(1, second)) ? route : null;
    },
  };
}
