/**
 * /api/catalog/secrets: create, list, get and delete by the
 * v2 path (raw URN, `urn:li:dataHubSecret:<name>`), the URN as one encoded
 * path segment, or `by-urn?urn=`. Native
 * callers only: secrets are this cluster's own connector credentials.
 * Bodies are never logged; `value` is never echoed, not even in a 422.
 */
import { z } from 'zod';
import { readJson } from '../../gateway/http/body.ts';
import { principalOf, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { catalogName } from './datasets-wire.ts';
import { created, flagFromQuery, noContent, ok, textFromQuery, urnFromQuery } from './route-kit.ts';
import type { SecretsService } from './secrets-service.ts';

const createBody = z.object({
  name: catalogName(256),
  value: z.string().min(1).max(65_536),
  owner: z.string().max(512).nullish(),
  description: z.string().max(4096).nullish(),
});

export function secretRoutes(service: SecretsService, maxBody: number): RouteDef[] {
  const base = { auth: 'user', nativeOnly: true } as const;
  const createRoute = async (ctx: RequestContext) => {
    const clobber = flagFromQuery(ctx, 'clobber');
    const body = await readJson(ctx.req, maxBody, createBody);
    const header = ctx.req.headers['x-user-urn'];
    return created(service.create(principalOf(ctx), body, clobber, typeof header === 'string' ? header : null));
  };
  const listRoute = (ctx: RequestContext) => ok(service.list(principalOf(ctx), textFromQuery(ctx, 'query')));
  const urnParam = (ctx: RequestContext) => ctx.params.urn as string;
  const remove = (ctx: RequestContext, urn: string) => {
    service.delete(principalOf(ctx), urn);
    return noContent();
  };
  return [
    // Both spellings: the documented path is /catalog/secrets; the public client calls the trailing slash.
    ...['/catalog/secrets/', '/catalog/secrets'].flatMap((path): RouteDef[] => [
      { ...base, method: 'POST', path, handle: createRoute },
      { ...base, method: 'GET', path, handle: listRoute },
    ]),
    { ...base, method: 'GET', path: '/catalog/secrets/by-urn', handle: (ctx) => ok(service.get(principalOf(ctx), urnFromQuery(ctx))) },
    {
      ...base,
      method: 'DELETE',
      path: '/catalog/secrets/by-urn',
      handle: (ctx) => remove(ctx, urnFromQuery(ctx)),
    },
    // Path-style: the URN percent-encoded as one segment (the SDK's encode_path_urn form).
    { ...base, method: 'GET', path: '/catalog/secrets/:urn', allowEncodedSlash: true, handle: (ctx) => ok(service.get(principalOf(ctx), urnParam(ctx))) },
    { ...base, method: 'DELETE', path: '/catalog/secrets/:urn', allowEncodedSlash: true, handle: (ctx) => remove(ctx, urnParam(ctx)) },
    { ...base, method: 'GET', path: '/catalog/secrets/v2/*urn', allowEncodedSlash: true, handle: (ctx) => ok(service.get(principalOf(ctx), urnParam(ctx))) },
    {
      ...base,
      method: 'DELETE',
      path: '/catalog/secrets/v2/*urn',
      allowEncodedSlash: true,
      handle: (ctx) => remove(ctx, urnParam(ctx)),
    },
  ];
}
