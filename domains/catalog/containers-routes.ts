/**
 * /api/catalog/containers: create and list (admin),
 * get (local users; members filtered), patch and delete (admin) through v2,
 * by-urn and the legacy path; membership add/remove (admin) through
 * `v2/{urn}/datasets[/{dataset_urn}]`, `{encoded_urn}/datasets[/{encoded_dataset_urn}]` and the
 * `by-urn/datasets` query form.
 */
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf, type Reply, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { ContainerService } from './containers-service.ts';
import { containerCreateBody, containerPatchBody, membershipBody, pageQuery } from './containers-wire.ts';
import { created, noContent, ok, rawTail, textFromQuery, urnFromQuery } from './route-kit.ts';
import { splitV2Tail, type V2Target } from './urn.ts';

const V2 = '/catalog/containers/v2/*urn';
const v2Target = (ctx: RequestContext): V2Target => splitV2Tail(rawTail(ctx, '/catalog/containers/v2/'), 'datasets', 'balanced');

export function containerRoutes(service: ContainerService, maxBody: number): RouteDef[] {
  const page = (ctx: RequestContext) => {
    const q = parseQuery(ctx.query, pageQuery);
    return { cursor: q.datasets_cursor, size: q.datasets_page_size };
  };
  const get = (ctx: RequestContext, urn: string): Reply => ok(service.get(principalOf(ctx), urn, page(ctx)));
  const change = async (ctx: RequestContext, urn: string): Promise<Reply> => {
    if (ctx.method === 'DELETE') {
      service.delete(urn);
      return noContent();
    }
    return ok(service.patch(principalOf(ctx), urn, await readJson(ctx.req, maxBody, containerPatchBody)));
  };
  const addMember = async (ctx: RequestContext, urn: string): Promise<Reply> => {
    const body = await readJson(ctx.req, maxBody, membershipBody);
    service.addDataset(urn, body.dataset_urn);
    return ok({ message: 'ok' });
  };
  const removeMember = (urn: string, datasetUrn: string): Reply => {
    service.removeDataset(urn, datasetUrn);
    return ok({ message: 'removed' });
  };
  const reader = { auth: 'user', nativeOnly: true } as const;
  const admin = { auth: 'admin' } as const;
  const urnRoute = { allowEncodedSlash: true } as const;
  return [
    {
      ...admin,
      method: 'POST',
      path: '/catalog/containers/',
      handle: async (ctx) => created(service.create(await readJson(ctx.req, maxBody, containerCreateBody))),
    },
    { ...admin, method: 'GET', path: '/catalog/containers/', handle: (ctx) => ok(service.list(principalOf(ctx), textFromQuery(ctx, 'query'), page(ctx))) },
    { ...reader, method: 'GET', path: '/catalog/containers/by-urn', handle: (ctx) => get(ctx, urnFromQuery(ctx)) },
    { ...admin, method: ['PATCH', 'DELETE'], path: '/catalog/containers/by-urn', handle: (ctx) => change(ctx, urnFromQuery(ctx)) },
    { ...admin, method: 'POST', path: '/catalog/containers/by-urn/datasets', handle: (ctx) => addMember(ctx, urnFromQuery(ctx, 'container_urn')) },
    {
      ...admin,
      method: 'DELETE',
      path: '/catalog/containers/by-urn/datasets',
      handle: (ctx) => removeMember(urnFromQuery(ctx, 'container_urn'), urnFromQuery(ctx, 'dataset_urn')),
    },
    {
      ...reader,
      ...urnRoute,
      method: 'GET',
      path: V2,
      handle(ctx) {
        const target = v2Target(ctx);
        if (target.sub) throw GatewayErrors.make.route_not_found();
        return get(ctx, target.urn);
      },
    },
    {
      ...admin,
      ...urnRoute,
      method: ['PATCH', 'DELETE', 'POST'],
      path: V2,
      handle(ctx) {
        const { urn, sub, rest } = v2Target(ctx);
        if (!sub && ctx.method !== 'POST') return change(ctx, urn);
        if (sub && ctx.method === 'POST' && rest === null) return addMember(ctx, urn);
        if (sub && ctx.method === 'DELETE' && rest !== null) return removeMember(urn, rest);
        throw GatewayErrors.make.route_not_found();
      },
    },
    // Path-style membership: the container URN percent-encoded as one segment, the dataset in the next one or in ?dataset_urn=.
    { ...admin, ...urnRoute, method: 'POST', path: '/catalog/containers/:urn/datasets', handle: (ctx) => addMember(ctx, ctx.params.urn as string) },
    {
      ...admin,
      ...urnRoute,
      method: 'DELETE',
      path: '/catalog/containers/:urn/datasets',
      handle: (ctx) => removeMember(ctx.params.urn as string, urnFromQuery(ctx, 'dataset_urn')),
    },
    {
      ...admin,
      ...urnRoute,
      method: 'DELETE',
      path: '/catalog/containers/:urn/datasets/:dataset',
      handle: (ctx) => removeMember(ctx.params.urn as string, ctx.params.dataset as string),
    },
    { ...reader, ...urnRoute, method: 'GET', path: '/catalog/containers/:urn', handle: (ctx) => get(ctx, ctx.params.urn as string) },
    { ...admin, ...urnRoute, method: ['PATCH', 'DELETE'], path: '/catalog/containers/:urn', handle: (ctx) => change(ctx, ctx.params.urn as string) },
  ];
}
