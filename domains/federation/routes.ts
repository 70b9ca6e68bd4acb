/**
 * HTTP surface of federation management: native-realm admin everywhere
 * except ping (any authenticated user, never a mesh principal). Parsing
 * only; logic in service.ts, pairing.ts, diagnose.ts.
 */
import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { FederationContext } from './context.ts';
import { diagnose, preflight, resolveAddress } from './diagnose.ts';
import { pair } from './pairing.ts';
import { createBody, forceQuery, listQuery, preflightBody, resolveBody } from './requests.ts';
import type { FederationService } from './service.ts';

const BASE = '/cluster/federations';
const id = (ctx: RequestContext) => ctx.params.id as string;
const ok = (body: unknown) => ({ status: 200, body });

export function federationRoutes(fctx: FederationContext, service: FederationService, maxBody: number): RouteDef[] {
  return [
    { method: 'GET', path: BASE, auth: 'admin', handle: (ctx) => ok(service.list(parseQuery(ctx.query, listQuery))) },
    {
      method: 'POST',
      path: BASE,
      auth: 'admin',
      handle: async (ctx) => ok(service.create(principalOf(ctx), await readJson(ctx.req, maxBody, createBody))),
    },
    {
      method: 'POST',
      path: `${BASE}/preflight`,
      auth: 'admin',
      handle: async (ctx) => ok(await preflight(fctx, (await readJson(ctx.req, maxBody, preflightBody)).remote_ips)),
    },
    {
      method: 'POST',
      path: `${BASE}/resolve-address`,
      auth: 'admin',
      handle: async (ctx) => ok(await resolveAddress(fctx, (await readJson(ctx.req, maxBody, resolveBody)).address)),
    },
    { method: 'GET', path: `${BASE}/:id`, auth: 'admin', handle: (ctx) => ok(service.get(id(ctx))) },
    {
      // A free-form object; the service refuses changes outside the updatable fields.
      method: 'PUT',
      path: `${BASE}/:id`,
      auth: 'admin',
      handle: async (ctx) => ok(service.update(id(ctx), await readJson(ctx.req, maxBody, z.record(z.string(), z.unknown())))),
    },
    { method: 'DELETE', path: `${BASE}/:id`, auth: 'admin', handle: async (ctx) => ok(await service.delete(id(ctx))) },
    { method: 'POST', path: `${BASE}/:id/pair`, auth: 'admin', handle: async (ctx) => ok(await pair(fctx, principalOf(ctx), id(ctx))) },
    {
      method: 'POST',
      path: `${BASE}/:id/disconnect`,
      auth: 'admin',
      handle: async (ctx) => ok(await service.disconnect(id(ctx), parseQuery(ctx.query, forceQuery).force)),
    },
    { method: 'POST', path: `${BASE}/:id/ping`, auth: 'user', nativeOnly: true, handle: async (ctx) => ok(await service.ping(id(ctx))) },
    { method: 'POST', path: `${BASE}/:id/diagnose`, auth: 'admin', handle: async (ctx) => ok(await diagnose(fctx, id(ctx))) },
  ];
}
