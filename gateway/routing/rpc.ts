/**
 * Connect-RPC mounting: paths `/<package>.<Service>/<Method>` of a service
 * some HandlerInstance.rpc names go, ahead of the prefix table, to ONE
 * Connect adapter that every module's services are registered into. The
 * adapter and the implementations are loaded on the first such request
 * (rpc-adapter.ts): until then a gateway holds only the service names. A
 * load that fails answers 503 `rpc_unavailable` and is tried again on the
 * next RPC. The RPC route runs no `authenticate` stage: an RPC authorizes
 * itself (the retrieval stream by its job token).
 */
import { GatewayErrors } from '../errors/gateway-errors.ts';
import type { RequestContext } from '../http/context.ts';
import type { HandlerInstance } from '../module.ts';
import type { RequestPlan } from '../pipeline/plan.ts';
import type { CompiledRoute } from './router.ts';

export interface RpcMount {
  /** The compiled route for a raw path, or null when no registered RPC serves it. */
  match(rawPath: string): CompiledRoute | null;
}

type RpcHandler = (ctx: RequestContext) => void;

export function compileRpc(instances: readonly HandlerInstance[], plan: Pick<RequestPlan, 'route'>): RpcMount | null {
  const declared = instances.flatMap((i) => (i.rpc ? [i.rpc] : []));
  if (declared.length === 0) return null;
  const services = new Set(declared.flatMap((d) => d.services));
  let loading: Promise<RpcHandler> | null = null;
  const adapter = () => {
    loading ??= import('./rpc-adapter.ts')
      .then(({ createRpcAdapter }) => createRpcAdapter(declared))
      .catch((error: unknown) => {
        loading = null;
        throw GatewayErrors.make.rpc_unavailable({}, error);
      });
    return loading;
  };
  const handle = async (ctx: RequestContext) => {
    (await adapter())(ctx);
    return undefined;
  };
  const spec = { auth: 'none', nativeOnly: false, sharedRealm: false, session: 'none', mesh: false, handle } as const;
  const route: CompiledRoute = {
    def: { method: 'POST', path: '/', auth: 'none', handle },
    segments: [],
    ...plan.route(spec),
  };
  return {
    match(rawPath) {
      const second = rawPath.indexOf('/', 1);
      return second > 1 && services.has(rawPath.slice(1, second)) ? route : null;
    },
  };
}
