/** HTTP surface of jobs (spec "Jobs"; contract §5.1–5.4) and the execution gate (§5.7): parsing only. */
import { z } from 'zod';
import { parseQuery, readJson, validate } from '../../gateway/http/body.ts';
import type { RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { Principal } from '../principal.ts';
import type { ExecutionGateService } from './gate.ts';
import { jobRequestSchema } from './request.ts';
import type { JobsService } from './service.ts';

const me = (ctx: RequestContext): Principal => ctx.principal as Principal;
/** Contract §5.3: job_id is a UUID path parameter; anything else is a 422. */
const jobId = (ctx: RequestContext): string => validate(z.object({ job_id: z.uuid() }), ctx.params, 'path').job_id;
const page = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100), offset: z.coerce.number().int().min(0).default(0) });
const gateBody = z.object({ type: z.string().min(1), config: z.record(z.string(), z.unknown()).nullish() });

export function jobRoutes(service: JobsService, maxBody: number): RouteDef[] {
  const body = (ctx: RequestContext) => readJson(ctx.req, maxBody, jobRequestSchema);
  return [
    {
      method: 'POST',
      path: '/cluster/jobs/submit',
      auth: 'user',
      handle: async (ctx) => ({ status: 201, body: await service.submit(me(ctx), await body(ctx)) }),
    },
    { method: 'POST', path: '/cluster/jobs/run', auth: 'user', handle: async (ctx) => ({ status: 200, body: await service.run(me(ctx), await body(ctx)) }) },
    {
      method: 'GET',
      path: '/cluster/jobs/',
      auth: 'user',
      handle: async (ctx) => ({ status: 200, body: await service.list(me(ctx), parseQuery(ctx.query, page)) }),
    },
    {
      method: 'GET',
      path: '/cluster/jobs/:job_id/status',
      auth: 'user',
      handle: async (ctx) => ({ status: 200, body: await service.status(me(ctx), jobId(ctx)) }),
    },
    {
      method: 'GET',
      path: '/cluster/jobs/:job_id/result',
      auth: 'user',
      handle: async (ctx) => ({ status: 200, body: await service.result(me(ctx), jobId(ctx)) }),
    },
    {
      method: 'GET',
      path: '/cluster/jobs/:job_id/logs',
      auth: 'user',
      handle: async (ctx) => ({ status: 200, body: await service.logs(me(ctx), jobId(ctx)) }),
    },
    {
      method: 'POST',
      path: '/cluster/jobs/:job_id/cancel',
      auth: 'user',
      handle: async (ctx) => ({ status: 200, body: await service.cancel(me(ctx), jobId(ctx)) }),
    },
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
        return { status: 200, body: gate.bind(me(ctx), type, config ?? {}) };
      },
    },
    { method: 'DELETE', path: '/cluster/execution-gate', auth: 'admin', nativeOnly: true, handle: () => ({ status: 200, body: gate.unbind() }) },
  ];
}
