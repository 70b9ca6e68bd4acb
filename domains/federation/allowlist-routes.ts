/** HTTP surface of the receiver's allowlist: native-realm admin; `external_id` arrives %-encoded (`@` → %40). */
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import type { RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { AllowlistService } from './allowlist.ts';
import { allowlistBody, cancelJobsQuery, restoreBody } from './requests.ts';

const BASE = '/cluster/federations/:id/users';
const id = (ctx: RequestContext) => ctx.params.id as string;
const ext = (ctx: RequestContext) => ctx.params.external_id as string;

export function allowlistRoutes(service: AllowlistService, maxBody: number): RouteDef[] {
  return [
    {
      method: 'POST',
      path: BASE,
      auth: 'admin',
      handle: async (ctx) => ({ status: 201, body: service.add(id(ctx), await readJson(ctx.req, maxBody, allowlistBody)) }),
    },
    { method: 'GET', path: BASE, auth: 'admin', handle: (ctx) => ({ status: 200, body: service.list(id(ctx)) }) },
    {
      method: 'POST',
      path: `${BASE}/:external_id/revoke`,
      auth: 'admin',
      handle: async (ctx) => ({ status: 200, body: await service.revoke(id(ctx), ext(ctx), parseQuery(ctx.query, cancelJobsQuery).cancel_in_flight_jobs) }),
    },
    {
      method: 'POST',
      path: `${BASE}/:external_id/restore`,
      auth: 'admin',
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, restoreBody);
        return { status: 200, body: service.restore(id(ctx), ext(ctx), body?.initial_tuples) };
      },
    },
  ];
}
