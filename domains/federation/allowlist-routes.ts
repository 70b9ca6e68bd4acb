/** HTTP surface of the receiver's allowlist: native-realm admin; `external_id` arrives %-encoded (`@` → %40). */

import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import type { RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import type { AllowlistService } from './allowlist.ts';
import { allowlistBody, cancelJobsQuery, restoreBody } from './requests.ts';
import { entryAnswer } from './wire.ts';

const BASE = '/cluster/federations/:id/users';
const id = (ctx: RequestContext) => ctx.params.id as string;
const ext = (ctx: RequestContext) => ctx.params.external_id as string;
const FOUND = ['federation_not_found'];
/** The initial tuples are written as grants of the brokered user: the model's rules apply. */
const GRANT_REASONS = ['namespace_unsupported', 'object_id_invalid', 'relation_unsupported'];

export function allowlistRoutes(service: AllowlistService, maxBody: number): RouteDef[] {
  return [
    {
      method: 'POST',
      path: BASE,
      auth: 'admin',
      doc: {
        summary: "Admit a remote user (by external id) to this receiver's allowlist",
        body: allowlistBody,
        answers: { 201: entryAnswer },
        errors: [...FOUND, 'federation_user_exists', 'federation_state_conflict', ...GRANT_REASONS],
      },
      handle: async (ctx) => ({
        status: 201,
        body: service.add(id(ctx), await readJson(ctx.req, maxBody, allowlistBody)),
      }),
    },
    {
      method: 'GET',
      path: BASE,
      auth: 'admin',
      doc: { summary: "The federation's allowlist", answers: { 200: z.array(entryAnswer) }, errors: FOUND },
      handle: (ctx) => ({ status: 200, body: service.list(id(ctx)) }),
    },
    {
      method: 'POST',
      path: `${BASE}/:external_id/revoke`,
      auth: 'admin',
      doc: {
        summary: "Revoke a remote user's admission (optionally cancelling their jobs in flight)",
        query: cancelJobsQuery,
        answers: { 200: entryAnswer.extend({ cancelled_jobs: z.number().int() }) },
        errors: [...FOUND, 'federation_user_not_found'],
      },
      handle: async (ctx) => ({
        status: 200,
        body: await service.revoke(id(ctx), ext(ctx), parseQuery(ctx.query, cancelJobsQuery).cancel_in_flight_jobs),
      }),
    },
    {
      method: 'POST',
      path: `${BASE}/:external_id/restore`,
      auth: 'admin',
      doc: {
        summary: "Restore a revoked remote user's admission",
        body: restoreBody,
        answers: { 200: entryAnswer },
        errors: [...FOUND, 'federation_user_not_found', 'federation_state_conflict', ...GRANT_REASONS],
      },
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, restoreBody);
        return { status: 200, body: service.restore(id(ctx), ext(ctx), body?.initial_tuples) };
      },
    },
  ];
}
