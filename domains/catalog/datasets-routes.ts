/**
 * /api/catalog/datasets: create and list,
 * then get/patch/delete and schema get/put through the three addressing
 * forms — v2 path (raw path, URN raw or percent-encoded), `by-urn?urn=`,
 * and the legacy single-segment path (decoded once; `%2F` admitted).
 */
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { readJson } from '../../gateway/http/body.ts';
import { principalOf, type Reply, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { DatasetService } from './datasets-service.ts';
import { datasetCreateBody, datasetPatchBody, schemaBody } from './datasets-wire.ts';
import { created, noContent, ok, rawTail, textFromQuery, urnFromQuery } from './route-kit.ts';
import { splitV2Tail } from './urn.ts';

const V2_PREFIX = '/catalog/datasets/v2/';

// The router answers HEAD with the GET route, so the handlers below treat HEAD as GET.

export function datasetRoutes(service: DatasetService, maxBody: number): RouteDef[] {
  const item = async (ctx: RequestContext, urn: string): Promise<Reply> => {
    const principal = principalOf(ctx);
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return ok(service.get(principal, urn));
    if (ctx.method === 'PATCH') return ok(service.patch(principal, urn, await readJson(ctx.req, maxBody, datasetPatchBody)));
    if (ctx.method === 'DELETE') {
      service.delete(principal, urn);
      return noContent();
    }
    throw GatewayErrors.make.method_not_allowed({ allowed: ['GET', 'PATCH', 'DELETE'] });
  };
  const schema = async (ctx: RequestContext, urn: string): Promise<Reply> => {
    const principal = principalOf(ctx);
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return ok(service.getSchema(principal, urn));
    if (ctx.method === 'PUT') return ok(service.putSchema(principal, urn, await readJson(ctx.req, maxBody, schemaBody)));
    throw GatewayErrors.make.method_not_allowed({ allowed: ['GET', 'PUT'] });
  };
  return [
    {
      method: 'POST',
      path: '/catalog/datasets/',
      auth: 'user',
      // Mesh callers read what they were granted; they do not create datasets on this cluster.
      nativeOnly: true,
      handle: async (ctx) => created(service.create(principalOf(ctx), await readJson(ctx.req, maxBody, datasetCreateBody))),
    },
    { method: 'GET', path: '/catalog/datasets/', auth: 'user', handle: (ctx) => ok(service.list(principalOf(ctx), textFromQuery(ctx, 'query'))) },
    { method: ['GET', 'PATCH', 'DELETE'], path: '/catalog/datasets/by-urn', auth: 'user', handle: (ctx) => item(ctx, urnFromQuery(ctx)) },
    { method: ['GET', 'PUT'], path: '/catalog/datasets/by-urn/schema', auth: 'user', handle: (ctx) => schema(ctx, urnFromQuery(ctx)) },
    {
      method: ['GET', 'PUT', 'PATCH', 'DELETE'],
      path: '/catalog/datasets/v2/*urn',
      auth: 'user',
      allowEncodedSlash: true,
      handle(ctx) {
        const target = splitV2Tail(rawTail(ctx, V2_PREFIX), 'schema', 'last');
        return target.sub ? schema(ctx, target.urn) : item(ctx, target.urn);
      },
    },
    {
      method: ['GET', 'PATCH', 'DELETE'],
      path: '/catalog/datasets/:urn',
      auth: 'user',
      allowEncodedSlash: true,
      handle: (ctx) => item(ctx, ctx.params.urn as string),
    },
  ];
}
