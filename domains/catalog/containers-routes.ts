/**
 * /api/catalog/containers: create and list (admin),
 * get (local users; members filtered), patch and delete (admin) through v2,
 * by-urn and the legacy path; membership add/remove (admin) through
 * `v2/{urn}/datasets[/{dataset_urn}]`, `{encoded_urn}/datasets[/{encoded_dataset_urn}]` and the
 * `by-urn/datasets` query form.
 */
import { z } from 'zod';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf, type Reply, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef, RouteDoc } from '../../gateway/module.ts';
import { messageAnswer, perMethod } from '../../gateway/openapi/route-docs.ts';
import type { ContainerService } from './containers-service.ts';
import {
  containerAnswer,
  containerCreateBody,
  containerPatchBody,
  membershipBody,
  pageQuery,
} from './containers-wire.ts';
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
import { splitV2Tail, type V2Target } from './urn.ts';

const V2 = '/catalog/containers/v2/*urn';

const CREATE_REASONS = ['container_exists', 'container_parent_invalid', 'container_not_found'];
const GET_DOC = {
  summary: 'A container with a page of its member datasets (members the caller may not read are left out)',
  query: pageQuery,
  answers: { 200: containerAnswer },
  errors: ['container_not_found'],
};
const CHANGE_DOCS: Record<'PATCH' | 'DELETE', RouteDoc> = {
  PATCH: {
    summary: 'Change a container',
    body: containerPatchBody,
    answers: { 200: containerAnswer },
    errors: ['container_not_found', 'container_parent_invalid'],
  },
  DELETE: {
    summary: 'Delete a container (its datasets stay)',
    answers: { 204: null },
    errors: ['container_not_found'],
  },
};
const ADD_DOC: RouteDoc = {
  summary: 'Add a dataset to the container',
  body: membershipBody,
  answers: { 200: messageAnswer },
  errors: ['container_not_found', 'catalog_dataset_not_found'],
};
const REMOVE_DOC: RouteDoc = {
  summary: 'Remove a dataset from the container',
  answers: { 200: messageAnswer },
  errors: ['container_not_found', 'dataset_not_in_container'],
};
const v2Target = (ctx: RequestContext): V2Target =>
  splitV2Tail(rawTail(ctx, '/catalog/containers/v2/'), 'datasets', 'balanced');

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
  const byUrn = { query: urnQuery('urn') };
  const member = { query: urnQuery('container_urn') };
  return [
    {
      ...admin,
      method: 'POST',
      path: '/catalog/containers/',
      doc: {
        summary: 'Create a container; answers its URN',
        body: containerCreateBody,
        answers: { 201: urnAnswer },
        errors: CREATE_REASONS,
      },
      handle: async (ctx) => created(service.create(await readJson(ctx.req, maxBody, containerCreateBody))),
    },
    {
      ...admin,
      method: 'GET',
      path: '/catalog/containers/',
      doc: {
        summary: 'Every container, optionally filtered by `query`',
        query: textQuery('query').extend(pageQuery.shape),
        answers: { 200: z.array(containerAnswer) },
      },
      handle: (ctx) => ok(service.list(principalOf(ctx), textFromQuery(ctx, 'query'), page(ctx))),
    },
    {
      ...reader,
      method: 'GET',
      path: '/catalog/containers/by-urn',
      doc: { ...GET_DOC, ...byUrn, query: byUrn.query.extend(pageQuery.shape) },
      handle: (ctx) => get(ctx, urnFromQuery(ctx)),
    },
    ...perMethod(
      { ...admin, path: '/catalog/containers/by-urn', handle: (ctx) => change(ctx, urnFromQuery(ctx)) },
      CHANGE_DOCS,
      byUrn,
    ),
    {
      ...admin,
      method: 'POST',
      path: '/catalog/containers/by-urn/datasets',
      doc: { ...ADD_DOC, ...member },
      handle: (ctx) => addMember(ctx, urnFromQuery(ctx, 'container_urn')),
    },
    {
      ...admin,
      method: 'DELETE',
      path: '/catalog/containers/by-urn/datasets',
      doc: { ...REMOVE_DOC, query: member.query.extend(urnQuery('dataset_urn').shape) },
      handle: (ctx) => removeMember(urnFromQuery(ctx, 'container_urn'), urnFromQuery(ctx, 'dataset_urn')),
    },
    {
      ...reader,
      ...urnRoute,
      method: 'GET',
      path: V2,
      doc: { ...GET_DOC, errors: [...GET_DOC.errors, 'route_not_found'] },
      handle(ctx) {
        const target = v2Target(ctx);
        if (target.sub) throw GatewayErrors.make.route_not_found();
        return get(ctx, target.urn);
      },
    },
    // The v2 path is the container, or `{urn}/datasets[/{dataset_urn}]` for membership; other pairings are not routes.
    ...perMethod(
      {
        ...admin,
        ...urnRoute,
        path: V2,
        handle(ctx) {
          const { urn, sub, rest } = v2Target(ctx);
          if (!sub && ctx.method !== 'POST') return change(ctx, urn);
          if (sub && ctx.method === 'POST' && rest === null) return addMember(ctx, urn);
          if (sub && ctx.method === 'DELETE' && rest !== null) return removeMember(urn, rest);
          throw GatewayErrors.make.route_not_found();
        },
      },
      {
        PATCH: CHANGE_DOCS.PATCH,
        DELETE: {
          ...REMOVE_DOC,
          summary: 'Delete the container, or with `/datasets/{dataset_urn}` remove a member',
          errors: CHANGE_DOCS.DELETE.errors,
        },
        POST: { ...ADD_DOC, summary: 'With `/datasets` after the URN: add a dataset to the container' },
      },
      { errors: ['route_not_found'] },
    ),
    // Path-style membership: the container URN percent-encoded as one segment, the dataset in the next one or in
    // ?dataset_urn=.
    {
      ...admin,
      ...urnRoute,
      method: 'POST',
      path: '/catalog/containers/:urn/datasets',
      doc: ADD_DOC,
      handle: (ctx) => addMember(ctx, ctx.params.urn as string),
    },
    {
      ...admin,
      ...urnRoute,
      method: 'DELETE',
      path: '/catalog/containers/:urn/datasets',
      doc: { ...REMOVE_DOC, query: urnQuery('dataset_urn') },
      handle: (ctx) => removeMember(ctx.params.urn as string, urnFromQuery(ctx, 'dataset_urn')),
    },
    {
      ...admin,
      ...urnRoute,
      method: 'DELETE',
      path: '/catalog/containers/:urn/datasets/:dataset',
      doc: REMOVE_DOC,
      handle: (ctx) => removeMember(ctx.params.urn as string, ctx.params.dataset as string),
    },
    {
      ...reader,
      ...urnRoute,
      method: 'GET',
      path: '/catalog/containers/:urn',
      doc: { ...GET_DOC, query: pageQuery },
      handle: (ctx) => get(ctx, ctx.params.urn as string),
    },
    ...perMethod(
      {
        ...admin,
        ...urnRoute,
        path: '/catalog/containers/:urn',
        handle: (ctx) => change(ctx, ctx.params.urn as string),
      },
      CHANGE_DOCS,
    ),
  ];
}
