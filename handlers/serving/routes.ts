/** `/api/serving/deployments` (issue 3): the registry over HTTP; parsing only, logic in service.ts. */
import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { type DeploymentService, deploymentInput } from './service.ts';

const listQuery = z.object({ kind: z.enum(['model', 'app', 'tool']).optional() });

export function servingRoutes(service: DeploymentService, maxBody: number): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/serving/deployments',
      auth: 'admin',
      async handle(ctx) {
        const input = await readJson(ctx.req, maxBody, deploymentInput);
        return { status: 201, body: await service.create(principalOf(ctx), input) };
      },
    },
    {
      method: 'GET',
      path: '/serving/deployments',
      auth: 'user',
      handle: (ctx) => ({ status: 200, body: service.list(principalOf(ctx), parseQuery(ctx.query, listQuery).kind) }),
    },
    {
      method: 'GET',
      path: '/serving/deployments/:id',
      auth: 'user',
      handle: (ctx) => ({ status: 200, body: service.get(principalOf(ctx), ctx.params.id as string) }),
    },
    {
      method: 'DELETE',
      path: '/serving/deployments/:id',
      auth: 'admin',
      async handle(ctx) {
        await service.remove(principalOf(ctx), ctx.params.id as string);
        return { status: 204 };
      },
    },
  ];
}
