/** HTTP surface of jobs (with the dispatch to the forwarding shim) and the execution gate: parsing only. */
import { z } from 'zod';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { parseQuery, readJson, uuidParam, validate } from '../../gateway/http/body.ts';
import { principalOf, type Reply, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { Span, Tracing } from '../../gateway/observability/tracing.ts';
import type { Principal } from '../../gateway/principal.ts';
import { type Caller, type MeshJobForwarder, type ShadowAction, targetOf } from './forward.ts';
import type { ExecutionGateService } from './gate.ts';
import { jobRequestSchema } from './request.ts';
import type { JobsService } from './service.ts';

const caller = (ctx: RequestContext, span = ctx.span): Caller => ({ principal: principalOf(ctx), bearer: ctx.bearer, inbound: ctx.meshPeer, span });
/** A shared-realm token is good for the mesh only: never for jobs of this cluster. */
function localCaller(ctx: RequestContext): Principal {
  if (principalOf(ctx).authMethod === 'shared_jwt') throw GatewayErrors.make.not_authenticated();
  return principalOf(ctx);
}
const jsonObject = z.record(z.string(), z.unknown());
/** job_id is a UUID path parameter; anything else is a 422, as the upstream platform answers. */
const jobId = (ctx: RequestContext): string => uuidParam(ctx.params, 'job_id');
const page = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100), offset: z.coerce.number().int().min(0).default(0) });
const gateBody = z.object({ type: z.string().min(1), config: z.record(z.string(), z.unknown()).nullish() });

export function jobRoutes(service: JobsService, forwarder: MeshJobForwarder, maxBody: number, tracing: Tracing): RouteDef[] {
  /** A non-local selector goes to the forwarding shim with the body as sent; `local` runs here. */
  async function submit(ctx: RequestContext, kind: 'submit' | 'run', span: Span): Promise<Reply> {
    const body = await readJson(ctx.req, maxBody, jsonObject);
    const input = validate(jobRequestSchema, body, 'body');
    const selector = targetOf(input);
    span.setAttribute('meshgate.cluster_selector', selector === 'local' ? 'local' : 'peer');
    if (selector !== 'local') return forwarder.submission(caller(ctx, span), kind, selector, body);
    const principal = localCaller(ctx);
    return kind === 'submit' ? { status: 201, body: await service.submit(principal, input) } : { status: 200, body: await service.run(principal, input) };
  }
  /** The submission's own span: the local record and runtime start, or the hop that forwards it. */
  const submission = (ctx: RequestContext, kind: 'submit' | 'run') => tracing.inSpan(`jobs.${kind}`, ctx.span, (span) => submit(ctx, kind, span));
  /** A job this caller forwarded through the shim is proxied to its federation; any other id is looked up here. */
  const perJob =
    (action: ShadowAction, local: (principal: Principal, id: string) => Promise<unknown>) =>
    async (ctx: RequestContext): Promise<Reply> => {
      const id = jobId(ctx);
      const proxied = await forwarder.shadowed(caller(ctx), id, action);
      return proxied ?? { status: 200, body: await local(localCaller(ctx), id) };
    };
  // Shared-realm tokens are accepted where the shim may forward (the persona's token is the peer token).
  const shim = { auth: 'user', acceptSharedRealm: true } as const;
  return [
    { method: 'POST', path: '/cluster/jobs/submit', ...shim, handle: (ctx) => submission(ctx, 'submit') },
    { method: 'POST', path: '/cluster/jobs/run', ...shim, handle: (ctx) => submission(ctx, 'run') },
    {
      method: 'GET',
      path: '/cluster/jobs/',
      auth: 'user',
      handle: async (ctx) => ({ status: 200, body: await service.list(principalOf(ctx), parseQuery(ctx.query, page)) }),
    },
    { method: 'GET', path: '/cluster/jobs/:job_id/status', ...shim, handle: perJob('status', (p, id) => service.status(p, id)) },
    { method: 'GET', path: '/cluster/jobs/:job_id/result', ...shim, handle: perJob('result', (p, id) => service.result(p, id)) },
    { method: 'GET', path: '/cluster/jobs/:job_id/logs', ...shim, handle: perJob('logs', (p, id) => service.logs(p, id)) },
    { method: 'POST', path: '/cluster/jobs/:job_id/cancel', ...shim, handle: perJob('cancel', (p, id) => service.cancel(p, id)) },
  ];
}

export function gateRoutes(gate: ExecutionGateService, maxBody: number): RouteDef[] {
  return [
    { method: 'GET', path: '/cluster/execution-gate', auth: 'user', handle: () => ({ status: 200, body: gate.view() }) },
    {
      method: 'PUT',
      path: '/cluster/execution-gate',
      auth: 'admin',
      nativeOnly: true,
      async handle(ctx) {
        const { type, config } = await readJson(ctx.req, maxBody, gateBody);
        return { status: 200, body: gate.bind(principalOf(ctx), type, config ?? {}) };
      },
    },
    { method: 'DELETE', path: '/cluster/execution-gate', auth: 'admin', nativeOnly: true, handle: () => ({ status: 200, body: gate.unbind() }) },
  ];
}
