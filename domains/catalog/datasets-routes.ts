/**
 * /api/catalog/datasets: create and list,
 * then get/patch/delete and schema get/put through the three addressing
 * forms — v2 path (raw path, URN raw or percent-encoded), `by-urn?urn=`,
 * and the legacy single-segment path (decoded once; `%2F` admitted).
 */
import { z } from 'zod';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { readJson } from '../../gateway/http/body.ts';
import { principalOf, type Reply, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef, RouteDoc } from '../../gateway/module.ts';
import { perMethod } from '../../gateway/openapi/route-docs.ts';
import type { DatasetService } from './datasets-service.ts';
import { datasetAnswer, datasetCreateBody, datasetPatchBody, schemaBody, storedSchemaAnswer } from './datasets-wire.ts';
import {
  created,
  noContent,
  ok,
  rawTail,
  textFromQuery,
  textQuery,
  urnAnswer,
  urnFromQuery,
  urnQuery,
} from './route-kit.ts';
import { splitV2Tail } from './urn.ts';

const V2_PREFIX = '/catalog/datasets/v2/';

/** Membership and secret references are checked on every write that may carry them. */
const WRITE_REASONS = [
  'container_not_found',
  'container_membership_admin_only',
  'secret_reference_forbidden',
  'rebac_denied',
];
const CREATE_REASONS = ['dataset_exists', ...WRITE_REASONS];
const ITEM_DOCS: Record<'GET' | 'PATCH' | 'DELETE', RouteDoc> = {
  GET: { summary: 'A dataset', answers: { 200: datasetAnswer }, errors: ['catalog_dataset_not_found'] },
  PATCH: {
    summary: 'Change a dataset',
    body: datasetPatchBody,
    answers: { 200: datasetAnswer },
    errors: ['catalog_dataset_not_found', ...WRITE_REASONS],
  },
  DELETE: {
    summary: 'Delete a dataset',
    answers: { 204: null },
    errors: ['catalog_dataset_not_found', 'secret_unavailable', 'rebac_denied'],
  },
};
const SCHEMA_DOCS: Record<'GET' | 'PUT', RouteDoc> = {
  GET: {
    summary: "A dataset's schema",
    answers: { 200: storedSchemaAnswer },
    errors: ['catalog_dataset_not_found', 'catalog_schema_not_set'],
  },
  PUT: {
    summary: "Replace a dataset's schema",
    body: schemaBody,
    answers: { 200: storedSchemaAnswer },
    errors: ['catalog_schema_update_not_found', 'catalog_dataset_not_found', 'rebac_denied'],
  },
};
const V2_GET: RouteDoc = {
  summary: 'A dataset, or its schema when the path ends in `/schema`',
  answers: { 200: z.union([datasetAnswer, storedSchemaAnswer]) },
  errors: ['catalog_dataset_not_found', 'catalog_schema_not_set'],
};

// The router answers HEAD with the GET route, so the handlers below treat HEAD as GET.

export function datasetRoutes(service: DatasetService, maxBody: number): RouteDef[] {
  const item = async (ctx: RequestContext, urn: string): Promise<Reply> => {
    const principal = principalOf(ctx);
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return ok(service.get(principal, urn));
    if (ctx.method === 'PATCH')
      return ok(service.patch(principal, urn, await readJson(ctx.req, maxBody, datasetPatchBody)));
    if (ctx.method === 'DELETE') {
      service.delete(principal, urn);
      return noContent();
    }
    throw GatewayErrors.make.method_not_allowed({ allowed: ['GET', 'PATCH', 'DELETE'] });
  };
  const schema = async (ctx: RequestContext, urn: string): Promise<Reply> => {
    const principal = principalOf(ctx);
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return ok(service.getSchema(principal, urn));
    if (ctx.method === 'PUT')
      return ok(service.putSchema(principal, urn, await readJson(ctx.req, maxBody, schemaBody)));
    throw GatewayErrors.make.method_not_allowed({ allowed: ['GET', 'PUT'] });
  };
  const urnRoute = { auth: 'user', allowEncodedSlash: true } as const;
  return [
    {
      method: 'POST',
      path: '/catalog/datasets/',
      auth: 'user',
      // Mesh callers read what they were granted; they do not create datasets on this cluster.
      nativeOnly: true,
      doc: {
        summary: 'Register a dataset; answers its URN',
        body: datasetCreateBody,
        answers: { 201: urnAnswer },
        errors: CREATE_REASONS,
      },
      handle: async (ctx) =>
        created(service.create(principalOf(ctx), await readJson(ctx.req, maxBody, datasetCreateBody))),
    },
    {
      method: 'GET',
      path: '/catalog/datasets/',
      auth: 'user',
      doc: {
        summary: 'The datasets the caller may read, optionally filtered by `query`',
        query: textQuery('query'),
        answers: { 200: z.array(datasetAnswer) },
      },
      handle: (ctx) => ok(service.list(principalOf(ctx), textFromQuery(ctx, 'query'))),
    },
    ...perMethod(
      { auth: 'user', path: '/catalog/datasets/by-urn', handle: (ctx) => item(ctx, urnFromQuery(ctx)) },
      ITEM_DOCS,
      { query: urnQuery('urn') },
    ),
    ...perMethod(
      { auth: 'user', path: '/catalog/datasets/by-urn/schema', handle: (ctx) => schema(ctx, urnFromQuery(ctx)) },
      SCHEMA_DOCS,
      {
        query: urnQuery('urn'),
      },
    ),
    // The v2 path is the dataset, or its schema when it ends in `/schema`; a method one of them lacks answers 405.
    ...perMethod(
      {
        ...urnRoute,
        path: '/catalog/datasets/v2/*urn',
        handle(ctx) {
          const target = splitV2Tail(rawTail(ctx, V2_PREFIX), 'schema', 'last');
          return target.sub ? schema(ctx, target.urn) : item(ctx, target.urn);
        },
      },
      { GET: V2_GET, PUT: SCHEMA_DOCS.PUT, PATCH: ITEM_DOCS.PATCH, DELETE: ITEM_DOCS.DELETE },
      { errors: ['method_not_allowed'] },
    ),
    ...perMethod(
      { ...urnRoute, path: '/catalog/datasets/:urn', handle: (ctx) => item(ctx, ctx.params.urn as string) },
      ITEM_DOCS,
    ),
  ];
}
