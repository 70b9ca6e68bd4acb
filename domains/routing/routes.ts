/** GET/PATCH /api/config/routing, its dry run (POST /api/config/routing/validate), GET /api/ping (liveness) and
 * GET /api/ready (readiness). */
import { z } from 'zod';
import { readJson } from '../../gateway/http/body.ts';
import type { RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { RoutingService } from './service.ts';

const fields = {
  base_host: z.string().nullish(),
  service_prefixes: z.record(z.string(), z.string()).nullish(),
  enabled_services: z.record(z.string(), z.boolean()).nullish(),
};
// Clients send either shape: the flat fields, or the same fields nested under `routing`.
const patchBody = z.object({ ...fields, routing: z.object(fields).optional() });

export function routingRoutes(service: RoutingService, maxBody: number, now: () => Date, ready: VoidFunction): RouteDef[] {
  const readPatch = async (ctx: RequestContext) => {
    const { routing, ...flat } = await readJson(ctx.req, maxBody, patchBody);
    return { ...routing, ...flat };
  };
  return [
    { method: 'GET', path: '/ping', auth: 'none', handle: () => ({ status: 200, body: { status: 'pong', timestamp: now().toISOString() } }) },
    {
      method: 'GET',
      path: '/ready',
      auth: 'none',
      handle() {
        ready();
        return { status: 200, body: { status: 'ready', timestamp: now().toISOString() } };
      },
    },
    { method: 'GET', path: '/config/routing', auth: 'user', handle: () => ({ status: 200, body: service.view() }) },
    {
      method: 'PATCH',
      path: '/config/routing',
      auth: 'admin',
      handle: async (ctx) => ({ status: 200, body: service.patch(await readPatch(ctx)) }),
    },
    {
      // The same body as PATCH, checked and never applied: forms show the problems before anything changes.
      method: 'POST',
      path: '/config/routing/validate',
      auth: 'admin',
      handle: async (ctx) => ({ status: 200, body: service.validate(await readPatch(ctx)) }),
    },
  ];
}
