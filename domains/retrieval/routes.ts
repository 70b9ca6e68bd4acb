/**
 * HTTP surface of retrieval (contract §8.1–8.4) and of dataset gate binding
 * (§9.1): parsing only; logic in service.ts and gates/binding.ts.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { parseQuery, readJson, uuidParam } from '../../gateway/http/body.ts';
import { principalOf, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { GateBindings } from './gates/binding.ts';
import type { RetrievalService } from './service.ts';
import { streamSse } from './transports/sse.ts';
import { createBody, listQuery } from './wire.ts';

const gateBody = z.object({ type: z.string().min(1).max(1024), config: z.unknown().optional() });

const ok = (body: unknown) => ({ status: 200, body });

export interface RouteDeps {
  readonly service: RetrievalService;
  readonly gates: GateBindings;
  readonly maxBody: number;
  readonly heartbeatMs: number;
  readonly logger: Logger;
}

export function retrievalRoutes({ service, gates, maxBody, heartbeatMs, logger }: RouteDeps): RouteDef[] {
  // Contract §8.2: a UUID path parameter; anything else is a 422, as on the jobs routes.
  const id = (ctx: RequestContext) => uuidParam(ctx.params, 'id');
  const urn = (ctx: RequestContext) => ctx.params.urn as string;
  const gateRoute = { path: '/catalog/datasets/:urn/gate', auth: 'user', allowEncodedSlash: true } as const;
  return [
    {
      method: 'POST',
      path: '/retrieval/jobs',
      auth: 'user',
      async handle(ctx) {
        return { status: 201, body: await service.create(principalOf(ctx), await readJson(ctx.req, maxBody, createBody)) };
      },
    },
    {
      method: 'GET',
      path: '/retrieval/jobs',
      auth: 'user',
      handle(ctx) {
        const { limit, offset } = parseQuery(ctx.query, listQuery);
        return ok(service.list(principalOf(ctx), limit, offset));
      },
    },
    { method: 'GET', path: '/retrieval/jobs/:id', auth: 'user', handle: (ctx) => ok(service.status(principalOf(ctx), id(ctx))) },
    { method: 'POST', path: '/retrieval/jobs/:id/cancel', auth: 'user', handle: async (ctx) => ok(await service.cancel(principalOf(ctx), id(ctx))) },
    {
      method: 'GET',
      path: '/retrieval/jobs/:id/stream',
      auth: 'user',
      async handle(ctx) {
        // Denials are thrown before the first byte, so they stay small JSON bodies (contract §8.4).
        const stream = await service.stream(principalOf(ctx), id(ctx));
        await streamSse(ctx.res, stream, heartbeatMs, logger);
        return undefined;
      },
    },
    {
      ...gateRoute,
      method: 'PUT',
      nativeOnly: true,
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, gateBody);
        return ok(gates.put(principalOf(ctx), urn(ctx), body.type, body.config ?? {}));
      },
    },
    { ...gateRoute, method: 'GET', handle: (ctx) => ok(gates.get(principalOf(ctx), urn(ctx))) },
    { ...gateRoute, method: 'DELETE', nativeOnly: true, handle: (ctx) => ok(gates.delete(principalOf(ctx), urn(ctx))) },
  ];
}
