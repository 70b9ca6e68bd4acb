/** HTTP surface of jobs (with the dispatch to the forwarding shim) and the execution gate: parsing only. */
import { z } from 'zod';
import type { NodeForwarder } from '../../gateway/cluster/forward.ts';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { parseQuery, readJson, uuidParam, validate } from '../../gateway/http/body.ts';
import { principalOf, type Reply, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef, RouteDoc } from '../../gateway/module.ts';
import type { Span, Tracing } from '../../gateway/observability/tracing.ts';
import { jsonObject } from '../../gateway/openapi/route-docs.ts';
import type { Principal } from '../../gateway/principal.ts';
import { type Caller, type MeshJobForwarder, type ShadowAction, targetOf } from './forward.ts';
import { type ExecutionGateService, gateAnswer, gateUnboundAnswer } from './gate.ts';
import { jobRequestSchema } from './request.ts';
import type { JobsService } from './service.ts';
import { logsAnswer, resultAnswer } from './wire.ts';

const caller = (ctx: RequestContext, span = ctx.span): Caller => ({
  principal: principalOf(ctx),
  bearer: ctx.bearer,
  inbound: ctx.meshPeer,
  span,
});
/** A shared-realm token is good for the mesh only: never for jobs of this cluster. */
function localCaller(ctx: RequestContext): Principal {
  if (principalOf(ctx).authMethod === 'shared_jwt') throw GatewayErrors.make.not_authenticated();
  return principalOf(ctx);
}
/** job_id is a UUID path parameter; anything else is a 422, as the upstream platform answers. */
const jobId = (ctx: RequestContext): string => uuidParam(ctx.params, 'job_id');
const page = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  offset: z.coerce.number().int().min(0).default(0),
});
const gateBody = z.object({ type: z.string().min(1), config: z.record(z.string(), z.unknown()).nullish() });
const jobParams = z.object({ job_id: z.uuid() });
/** A non-local `cluster_selector` goes through mesh egress, with its refusals. */
const FORWARD_REASONS = [
  'mesh_target_not_found',
  'mesh_target_ambiguous',
  'mesh_target_is_local',
  'mesh_proxy_bad_gateway',
  'mesh_proxy_timeout',
];
const SUBMIT_REASONS = [
  ...FORWARD_REASONS,
  'job_runtime_unavailable',
  'job_sandbox_unavailable',
  'python_package_not_approved',
  'no_execution_gate_configured_for_mesh',
  'gate_load_error',
];
const jobAnswer = z.looseObject({ job_id: z.string(), status: z.string() });
const jobDoc = (summary: string, answer: z.ZodType, errors: string[] = []): RouteDoc => ({
  summary,
  params: jobParams,
  answers: { 200: answer },
  errors: ['job_not_found', ...FORWARD_REASONS, ...errors],
});

/** Where a job request may be sent on: a peer cluster (a job forwarded through the mesh), or this cluster's node. */
export interface JobForwarders {
  readonly mesh: MeshJobForwarder;
  readonly nodes: NodeForwarder;
}

export function jobRoutes(
  service: JobsService,
  forwarders: JobForwarders,
  maxBody: number,
  tracing: Tracing,
): RouteDef[] {
  const forwarder = forwarders.mesh;
  /** A non-local selector goes to the forwarding shim with the body as sent; `local` runs here. */
  async function submit(ctx: RequestContext, kind: 'submit' | 'run', span: Span): Promise<Reply> {
    const body = await readJson(ctx.req, maxBody, jsonObject);
    const input = validate(jobRequestSchema, body, 'body');
    const selector = targetOf(input);
    span.setAttribute('meshgate.cluster_selector', selector === 'local' ? 'local' : 'peer');
    if (selector !== 'local') return forwarder.submission(caller(ctx, span), kind, selector, body);
    const principal = localCaller(ctx);
    return kind === 'submit'
      ? { status: 201, body: await service.submit(principal, input) }
      : { status: 200, body: await service.run(principal, input) };
  }
  /** The submission's own span: the local record and runtime start, or the hop that forwards it. */
  const submission = (ctx: RequestContext, kind: 'submit' | 'run') =>
    tracing.inSpan(`jobs.${kind}`, ctx.span, (span) => submit(ctx, kind, span));
  /** A job this caller forwarded through the shim is proxied to its federation; any other id is looked up here. */
  const perJob =
    (action: ShadowAction, local: (principal: Principal, id: string) => Promise<unknown>) =>
    async (ctx: RequestContext): Promise<Reply> => {
      const id = jobId(ctx);
      const proxied = (await forwarder.shadowed(caller(ctx), id, action)) ?? (await onOwnerNode(ctx, id, action));
      return proxied ?? { status: 200, body: await local(localCaller(ctx), id) };
    };
  /**
   * Logs and the result live with the job's processes, on the cluster node that runs it: a token-bearing caller's
   * read is sent on there (that node authorizes it as any node would). Status and cancel are answered here.
   */
  const onOwnerNode = async (ctx: RequestContext, id: string, action: ShadowAction): Promise<Reply | null> => {
    if ((action !== 'logs' && action !== 'result') || ctx.bearer === null || forwarders.nodes.forwarded(ctx))
      return null;
    const url = service.ownerUrl(id);
    return url === null ? null : forwarders.nodes.forward(ctx, url);
  };
  // Shared-realm tokens are accepted where the shim may forward (the persona's token is the peer token).
  const shim = { auth: 'user', acceptSharedRealm: true } as const;
  return [
    {
      method: 'POST',
      path: '/cluster/jobs/submit',
      ...shim,
      doc: {
        summary: 'Submit a job (here, or to the cluster `cluster_selector` names)',
        body: jobRequestSchema,
        answers: { 201: jobAnswer },
        errors: SUBMIT_REASONS,
      },
      handle: (ctx) => submission(ctx, 'submit'),
    },
    {
      method: 'POST',
      path: '/cluster/jobs/run',
      ...shim,
      doc: {
        summary: 'Submit a job and wait for its end',
        body: jobRequestSchema,
        answers: { 200: jobAnswer },
        errors: SUBMIT_REASONS,
      },
      handle: (ctx) => submission(ctx, 'run'),
    },
    {
      method: 'GET',
      path: '/cluster/jobs/',
      auth: 'user',
      doc: {
        summary: "The caller's jobs (every job, for administrators), newest first",
        query: page,
        answers: { 200: z.array(jobAnswer) },
      },
      handle: async (ctx) => ({ status: 200, body: await service.list(principalOf(ctx), parseQuery(ctx.query, page)) }),
    },
    {
      method: 'GET',
      path: '/cluster/jobs/:job_id/status',
      ...shim,
      doc: jobDoc("A job's record and status", jobAnswer),
      handle: perJob('status', (p, id) => service.status(p, id)),
    },
    {
      method: 'GET',
      path: '/cluster/jobs/:job_id/result',
      ...shim,
      doc: jobDoc("A succeeded job's result", resultAnswer, [
        'job_not_succeeded',
        'job_result_missing',
        'job_logs_expired',
      ]),
      handle: perJob('result', (p, id) => service.result(p, id)),
    },
    {
      method: 'GET',
      path: '/cluster/jobs/:job_id/logs',
      ...shim,
      doc: jobDoc("A job's output so far", logsAnswer, ['job_logs_expired', 'job_runtime_unavailable']),
      handle: perJob('logs', (p, id) => service.logs(p, id)),
    },
    {
      method: 'POST',
      path: '/cluster/jobs/:job_id/cancel',
      ...shim,
      doc: jobDoc('Cancel a job', jobAnswer),
      handle: perJob('cancel', (p, id) => service.cancel(p, id)),
    },
  ];
}

export function gateRoutes(gate: ExecutionGateService, maxBody: number): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/cluster/execution-gate',
      auth: 'user',
      doc: {
        summary: 'The execution gate bound to job submission',
        answers: { 200: gateAnswer },
        errors: ['not_configured'],
      },
      handle: () => ({ status: 200, body: gate.view() }),
    },
    {
      method: 'PUT',
      path: '/cluster/execution-gate',
      auth: 'admin',
      nativeOnly: true,
      doc: {
        summary: 'Bind an execution gate to job submission',
        body: gateBody,
        answers: { 200: gateAnswer },
        errors: ['wrong_kind', 'gate_config_invalid', 'classpath_unimportable', 'classpath_not_allowed'],
      },
      async handle(ctx) {
        const { type, config } = await readJson(ctx.req, maxBody, gateBody);
        return { status: 200, body: gate.bind(principalOf(ctx), type, config ?? {}) };
      },
    },
    {
      method: 'DELETE',
      path: '/cluster/execution-gate',
      auth: 'admin',
      nativeOnly: true,
      doc: { summary: 'Unbind the execution gate', answers: { 200: gateUnboundAnswer }, errors: ['not_configured'] },
      handle: () => ({ status: 200, body: gate.unbind() }),
    },
  ];
}
