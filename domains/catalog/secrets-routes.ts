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
import type { RouteDef, RouteDoc } from '../../gateway/module.ts';
import { catalogName } from './datasets-wire.ts';
import {
  created,
  flagFromQuery,
  flagQuery,
  noContent,
  ok,
  textFromQuery,
  textQuery,
  urnAnswer,
  urnFromQuery,
  urnQuery,
} from './route-kit.ts';
import { type SecretsService, secretAnswer } from './secrets-service.ts';

const createBody = z.object({
  name: catalogName(256),
  value: z.string().min(1).max(65_536),
  owner: z.string().max(512).nullish(),
  description: z.string().max(4096).nullish(),
});

const createQuery = flagQuery('clobber');
const CREATE_DOC: RouteDoc = {
  summary: 'Store a secret (with `clobber=true`, replace one of the same name); answers its URN',
  query: createQuery,
  body: createBody,
  answers: { 201: urnAnswer },
  errors: ['secret_exists', 'secret_owner_forbidden', 'secret_owner_unknown'],
};
const LIST_DOC: RouteDoc = {
  summary: 'The secrets the caller owns (never their values)',
  query: textQuery('query'),
  answers: { 200: z.array(secretAnswer) },
};

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
  type Urn = (ctx: RequestContext) => string;
  const get = (urn: Urn, query?: RouteDoc['query']) => ({
    doc: { summary: 'A secret (never its value)', query, answers: { 200: secretAnswer }, errors: ['secret_not_found'] },
    handle: (ctx: RequestContext) => ok(service.get(principalOf(ctx), urn(ctx))),
  });
  const del = (urn: Urn, query?: RouteDoc['query']) => ({
    doc: {
      summary: 'Delete a secret',
      query,
      answers: { 204: null },
      errors: ['secret_not_found', 'secret_owner_forbidden'],
    },
    handle: (ctx: RequestContext) => remove(ctx, urn(ctx)),
  });
  const byQuery = (ctx: RequestContext) => urnFromQuery(ctx);
  return [
    // Both spellings: the documented path is /catalog/secrets; the public client calls the trailing slash.
    ...['/catalog/secrets/', '/catalog/secrets'].flatMap((path): RouteDef[] => [
      { ...base, method: 'POST', path, doc: CREATE_DOC, handle: createRoute },
      { ...base, method: 'GET', path, doc: LIST_DOC, handle: listRoute },
    ]),
    { ...base, method: 'GET', path: '/catalog/secrets/by-urn', ...get(byQuery, urnQuery('urn')) },
    { ...base, method: 'DELETE', path: '/catalog/secrets/by-urn', ...del(byQuery, urnQuery('urn')) },
    // Path-style: the URN percent-encoded as one segment (the SDK's encode_path_urn form), or raw after v2/.
    ...['/catalog/secrets/:urn', '/catalog/secrets/v2/*urn'].flatMap((path): RouteDef[] => [
      { ...base, method: 'GET', path, allowEncodedSlash: true, ...get(urnParam) },
      { ...base, method: 'DELETE', path, allowEncodedSlash: true, ...del(urnParam) },
    ]),
  ];
}
