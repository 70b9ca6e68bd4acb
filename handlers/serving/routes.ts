/** `/api/serving/deployments` (issue 3): the registry over HTTP; parsing only, logic in service.ts. */
import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { Principal } from '../principal.ts';
import { type DeploymentService, deploymentInput } from './service.ts';

const listQuery = z.object({ kind: z.enum(['model', 'app', 'tool']).optional() });

export function servingRoutes(service: DeploymentService, maxBody: number): RouteDef[] {
  const who = (principal: Principal | null) => principal as Principal;
  return [
    {
      method: 'POST',
      path: '/serving/deployments',
      auth: 'admin',
      async handle(ctx) {
        const input = await readJson(ctx.req, maxBody, deploymentInput);
        return { status: 201, body: service.create(who(ctx.principal), input) };
      },
    },
    {
      method: 'GET',
      path: '/serving/deployments',
      auth: 'user',
      handle: (ctx) => ({ status: 200, body: service.list(who(ctx.principal), parseQuery(ctx.query, listQuery).kind) }),
    },
    {
      method: 'GET',
      path: '/serving/deployments/:id',
      auth: 'user',
      handle: (ctx) => ({ status: 200, body: service.get(who(ctx.principal), ctx.params.id as string) }),
    },
    {
      method: 'DELETE',
      path: '/serving/deployments/:id',
      auth: 'admin',
      handle(ctx) {
        service.remove(who(ctx.principal), ctx.params.id as string);
        return { status: 204 };
      },
    },
  ];
}
