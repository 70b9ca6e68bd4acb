/**
 * The tuple API: write, delete, delete-by-object, check
 * and list. Parsing only; the rules (model validation, admin-or-owner for
 * writes, visibility of listings) live in AuthzService.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { AuthzErrors } from './errors.ts';
import { listQuery, objectDeleteBody, tenantOf, tupleBody, tupleDeleteBody } from './request-wire.ts';
import { flatRow, flatRowAnswer } from './response-wire.ts';
import { type AuthzService, validateRelation } from './service.ts';
import type { SubjectsService } from './subjects.ts';

const NO_CONTENT = { status: 204 } as const;
/** What a tuple write may be refused with: the model's rules, then admin-or-owner. */
const WRITE_REASONS = [
  'tenant_mismatch',
  'rebac_denied',
  'namespace_unsupported',
  'object_id_invalid',
  'relation_unsupported',
];
const checkAnswer = z.object({
  allow: z.boolean(),
  decision_id: z.string(),
  reason: z.string(),
  via: z.string().optional(),
});

export function tupleRoutes(authz: AuthzService, subjects: SubjectsService, maxBody: number): RouteDef[] {
  const list: RouteDef['handle'] = (ctx) => {
    const q = parseQuery(ctx.query, listQuery);
    const rows = authz.listVisible(principalOf(ctx), {
      tenant: q.tenant ?? q.tenant_id ?? tenantOf(ctx.req, undefined),
      objectNs: q.object_namespace,
      objectId: q.object_id,
      subjectNs: q.subject_namespace,
      subjectId: q.subject_id,
      relation: q.relation,
      limit: q.limit,
      offset: q.offset,
    });
    return { status: 200, body: rows.map(flatRow) };
  };
  const listDoc = {
    summary: 'The tuples the caller may see, filtered',
    query: listQuery,
    answers: { 200: z.array(flatRowAnswer) },
  };
  return [
    {
      method: 'POST',
      path: '/auth/tuples',
      auth: 'user',
      doc: {
        summary: 'Write a relationship tuple (administrators, or managers of the object)',
        body: tupleBody,
        answers: { 204: null },
        errors: WRITE_REASONS,
      },
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, tupleBody);
        authz.writeAs(principalOf(ctx), [{ ...body, tenantId: tenantOf(ctx.req, body.tenant_id) }]);
        return NO_CONTENT;
      },
    },
    {
      method: 'DELETE',
      path: '/auth/tuples',
      auth: 'user',
      doc: {
        summary: 'Delete relationship tuples (all relations when none is named)',
        body: tupleDeleteBody,
        answers: { 204: null },
        errors: WRITE_REASONS,
      },
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, tupleDeleteBody);
        authz.deleteAs(principalOf(ctx), {
          ...body,
          relation: body.relation ?? null,
          tenantId: tenantOf(ctx.req, body.tenant_id),
        });
        return NO_CONTENT;
      },
    },
    {
      method: 'DELETE',
      path: '/auth/tuples/object',
      auth: 'user',
      doc: {
        summary: 'Delete every tuple of an object',
        body: objectDeleteBody,
        answers: { 204: null },
        errors: WRITE_REASONS,
      },
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, objectDeleteBody);
        authz.deleteObjectAs(principalOf(ctx), body.object, tenantOf(ctx.req, body.tenant_id));
        return NO_CONTENT;
      },
    },
    {
      method: 'POST',
      path: '/auth/check',
      auth: 'user',
      doc: {
        summary: 'Decide whether a subject holds a relation on an object (others than the caller: managers only)',
        body: tupleBody,
        answers: { 200: checkAnswer },
        errors: [...WRITE_REASONS, 'access_denied'],
      },
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, tupleBody);
        const tenant = tenantOf(ctx.req, body.tenant_id);
        validateRelation(body.object, body.relation);
        if (body.subject.namespace !== 'user')
          throw AuthzErrors.make.relation_unsupported({ subject_namespace: body.subject.namespace });
        // Anyone may ask about themselves; asking about another subject reveals their grants, so it takes manager
        // rights.
        const self = body.subject.id === principalOf(ctx).userId && tenant === principalOf(ctx).tenantId;
        if (!self) authz.requireManager(principalOf(ctx), body.object, tenant);
        const subject = self ? principalOf(ctx) : subjects.principalFor(body.subject.id, tenant);
        const decision = authz.decide(subject, body.relation, body.object);
        const decisionId = randomUUID();
        ctx.logger.info(
          {
            decision_id: decisionId,
            subject: body.subject.id,
            relation: body.relation,
            object: `${body.object.namespace}:${body.object.id}`,
            tenant,
            ...decision,
          },
          'authz decision',
        );
        const answer = {
          allow: decision.allow,
          decision_id: decisionId,
          reason: decision.reason,
          ...(decision.via ? { via: decision.via } : {}),
        };
        // A deny is 403 with the decision beside the detail: the platform SDK's check_access raises on it.
        if (!decision.allow) throw AuthzErrors.make.access_denied(answer);
        return { status: 200, body: answer };
      },
    },
    // Clients call the trailing-slash form; the bare form is served too rather than 405 (POST owns it).
    ...['/auth/tuples/', '/auth/tuples'].map(
      (path): RouteDef => ({
        method: 'GET',
        path,
        auth: 'user',
        doc: { ...listDoc, errors: WRITE_REASONS },
        handle: list,
      }),
    ),
  ];
}
