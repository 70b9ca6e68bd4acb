/** GET/PATCH /api/config/routing, its dry run (POST /api/config/routing/validate), GET /api/ping (liveness) and
 * GET /api/ready (readiness). */
import { z } from 'zod';
import { readJson } from '../../gateway/http/body.ts';
import type { RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { type RoutingService, routingAnswer } from './service.ts';

const fields = {
  base_host: z.string().nullish(),
  service_prefixes: z.record(z.string(), z.string()).nullish(),
  enabled_services: z.record(z.string(), z.boolean()).nullish(),
};
// Clients send either shape: the flat fields, or the same fields nested under `routing`.
const patchBody = z.object({ ...fields, routing: z.object(fields).optional() });

export function routingRoutes(
  service: RoutingService,
  maxBody: number,
  now: () => Date,
  ready: VoidFunction,
): RouteDef[] {
  const readPatch = async (ctx: RequestContext) => {
    const { routing, ...flat } = await readJson(ctx.req, maxBody, patchBody);
    return { ...routing, ...flat };
  };
  return [
    {
      method: 'GET',
      path: '/ping',
      auth: 'none',
      doc: {
        summary: 'Liveness: pong and the time',
        answers: { 200: z.object({ status: z.literal('pong'), timestamp: z.string() }) },
      },
      handle: () => ({ status: 200, body: { status: 'pong', timestamp: now().toISOString() } }),
    },
    {
      method: 'GET',
      path: '/ready',
      auth: 'none',
      doc: {
        summary: 'Readiness: the database answers a query (503 takes this instance out of rotation)',
        answers: { 200: z.object({ status: z.literal('ready'), timestamp: z.string() }) },
        errors: ['database_unavailable'],
      },
      handle() {
        ready();
        return { status: 200, body: { status: 'ready', timestamp: now().toISOString() } };
      },
    },
    {
      method: 'GET',
      path: '/config/routing',
      auth: 'user',
      doc: {
        summary: 'The routing configuration: service prefixes and which services are on',
        answers: { 200: routingAnswer },
      },
      handle: () => ({ status: 200, body: service.view() }),
    },
    {
      method: 'PATCH',
      path: '/config/routing',
      auth: 'admin',
      doc: {
        summary: 'Change service prefixes or turn services on and off',
        body: patchBody,
        answers: { 200: routingAnswer },
        errors: ['routing_config_invalid'],
      },
      handle: async (ctx) => ({ status: 200, body: service.patch(await readPatch(ctx)) }),
    },
    {
      // The same body as PATCH, checked and never applied: forms show the problems before anything changes.
      method: 'POST',
      path: '/config/routing/validate',
      auth: 'admin',
      doc: {
        summary: 'Check a routing change without applying it: whether it is valid, and every problem',
        body: patchBody,
        answers: { 200: z.object({ valid: z.boolean(), problems: z.array(z.string()) }) },
      },
      handle: async (ctx) => ({ status: 200, body: service.validate(await readPatch(ctx)) }),
    },
  ];
}
