/**
 * The one Connect adapter every module's RPC services are registered into,
 * built on the first RPC (rpc.ts). The request id and logger reach the
 * implementation through RPC_CONTEXT.
 */
import { createContextKey, createContextValues } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { Logger } from 'pino';
import type { NodeRequest, RequestContext } from '../http/context.ts';
import type { RpcServices } from '../module.ts';

export interface RpcRequestInfo {
  readonly requestId: string;
  readonly logger: Logger;
}

export const RPC_CONTEXT = createContextKey<RpcRequestInfo | null>(null, { description: 'meshgate request' });

/**
 * Loads every module's implementation and registers it. A service registered under a name its module did not
 * declare would never be routed here, so it fails the load rather than going unserved unnoticed.
 */
export async function createRpcAdapter(declared: readonly RpcServices[]): Promise<(ctx: RequestContext) => void> {
  const registrars = await Promise.all(declared.map((d) => d.load()));
  const named = new Set(declared.flatMap((d) => d.services));
  const contexts = new WeakMap<NodeRequest, RpcRequestInfo>();
  const adapter = connectNodeAdapter({
    routes(router) {
      for (const register of registrars) register(router);
      for (const { service } of router.handlers) {
        if (!named.has(service.typeName)) throw new Error(`RPC service ${service.typeName} is not declared`);
      }
    },
    contextValues: (req) => createContextValues().set(RPC_CONTEXT, contexts.get(req) ?? null),
  });
  return (ctx) => {
    contexts.set(ctx.req, { requestId: ctx.requestId, logger: ctx.logger });
    adapter(ctx.req, ctx.res);
  };
}
