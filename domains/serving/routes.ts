/** `/api/serving/deployments`: the registry over HTTP; parsing only, logic in service.ts. */
import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { type DeploymentService, deploymentInput, deploymentPatch } from './service.ts';

/** Models unless asked (this listing is the models one the SDK parses); `all` for every kind. */
const listQuery = z.object({ kind: z.enum(['model', 'app', 'tool', 'all']).default('model') });

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
      handle: (ctx) => {
        const { kind } = parseQuery(ctx.query, listQuery);
        return { status: 200, body: service.list(principalOf(ctx), kind === 'all' ? undefined : kind) };
      },
    },
    {
      // The SDK's get_deployment_status: a bare JSON string; a registered route is live (wire.ts).
      method: 'GET',
      path: '/serving/deployment/:id/status',
      auth: 'user',
      handle: (ctx) => {
        service.get(principalOf(ctx), ctx.params.id as string); // 404 when absent or not visible
        return { status: 200, body: 'DEPLOYED' };
      },
    },
    ...['/serving/deployments/:id', '/serving/deployment/:id' /* the SDK's get_deployment path */].map(
      (path): RouteDef => ({
        method: 'GET',
        path,
        auth: 'user',
        handle: (ctx) => ({ status: 200, body: service.get(principalOf(ctx), ctx.params.id as string) }),
      }),
    ),
    {
      // Owners and administrators; mesh callers change nothing here.
      method: 'PATCH',
      path: '/serving/deployments/:id',
      auth: 'user',
      nativeOnly: true,
      async handle(ctx) {
        const { visibility } = await readJson(ctx.req, maxBody, deploymentPatch);
        return { status: 200, body: service.setVisibility(principalOf(ctx), ctx.params.id as string, visibility) };
      },
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
    {
      // The SDK's stop_deployment (its `force` is ignored: nothing runs here to stop); it returns the body as its bool.
      method: 'DELETE',
      path: '/serving/deployment/:id',
      auth: 'admin',
      async handle(ctx) {
        await service.remove(principalOf(ctx), ctx.params.id as string);
        return { status: 200, body: true };
      },
    },
  ];
}
