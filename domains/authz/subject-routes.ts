/**
 * The subjects API (admin, native realm) and the resource grants API
 * (admin or owner of the object). Parsing only.
 */
import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { fromGrant, grantBody, resourceGrantBody, subjectBody, tenantOf } from './request-wire.ts';
import { grantAnswer, grantView, resourceGrantAnswer, resourceGrantView, subjectAnswer } from './response-wire.ts';
import type { AuthzService } from './service.ts';
import type { SubjectsService } from './subjects.ts';

const subjectParam = (ctx: RequestContext) => ctx.params.subject as string;
const deleteQuery = z.object({ cascade: z.enum(['grants']).optional() });
const resourceQuery = z.object({
  object_id: z.string().min(1).max(1024),
  tenant_id: z.string().min(1).max(128).optional(),
});
/** Grants are tuples: the model's rules apply to them. */
const GRANT_REASONS = [
  'subject_not_found',
  'tenant_mismatch',
  'namespace_unsupported',
  'object_id_invalid',
  'relation_unsupported',
];

export function subjectRoutes(subjects: SubjectsService, maxBody: number): RouteDef[] {
  const admin = { auth: 'admin', nativeOnly: true } as const;
  const grantInput = async (ctx: RequestContext) => {
    const body = await readJson(ctx.req, maxBody, grantBody);
    return fromGrant(body, tenantOf(ctx.req, body.tenant_id));
  };
  return [
    {
      ...admin,
      method: 'PUT',
      path: '/authz/subjects/:subject',
      doc: {
        summary: "Create (201) or update (200) a subject's attributes",
        body: subjectBody,
        answers: { 200: subjectAnswer, 201: subjectAnswer },
        errors: [
          'subject_name_invalid',
          'subject_is_brokered',
          'subject_not_found',
          'attribute_not_declared',
          'attribute_value_invalid',
          'attribute_name_reserved',
        ],
      },
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, subjectBody);
        const { created, subject } = await subjects.upsert(subjectParam(ctx), body);
        return { status: created ? 201 : 200, body: subject };
      },
    },
    {
      ...admin,
      method: 'GET',
      path: '/authz/subjects/:subject',
      doc: {
        summary: 'A subject with its attributes and grants',
        answers: { 200: subjectAnswer },
        errors: ['subject_not_found'],
      },
      handle: (ctx) => ({ status: 200, body: subjects.get(subjectParam(ctx)) }),
    },
    {
      ...admin,
      method: 'DELETE',
      path: '/authz/subjects/:subject',
      doc: {
        summary: 'Delete a subject (with `cascade=grants`, its grants too)',
        query: deleteQuery,
        answers: { 204: null },
        errors: ['subject_not_found', 'subject_has_grants', 'subject_is_caller', 'subject_is_brokered'],
      },
      handle(ctx) {
        const { cascade } = parseQuery(ctx.query, deleteQuery);
        subjects.remove(principalOf(ctx), subjectParam(ctx), cascade === 'grants');
        return { status: 204 };
      },
    },
    {
      ...admin,
      method: 'GET',
      path: '/authz/subjects/:subject/grants',
      doc: { summary: "A subject's grants", answers: { 200: z.array(grantAnswer) }, errors: ['subject_not_found'] },
      handle: (ctx) => ({ status: 200, body: subjects.grants(subjectParam(ctx)).map(grantView) }),
    },
    {
      ...admin,
      method: 'POST',
      path: '/authz/subjects/:subject/grants',
      doc: {
        summary: 'Grant a subject a relation on an object',
        body: grantBody,
        answers: { 201: grantAnswer },
        errors: GRANT_REASONS,
      },
      async handle(ctx) {
        return { status: 201, body: grantView(subjects.grant(subjectParam(ctx), await grantInput(ctx))) };
      },
    },
    {
      ...admin,
      method: 'DELETE',
      path: '/authz/subjects/:subject/grants',
      doc: { summary: 'Revoke a grant', body: grantBody, answers: { 204: null }, errors: GRANT_REASONS },
      async handle(ctx) {
        subjects.revoke(subjectParam(ctx), await grantInput(ctx));
        return { status: 204 };
      },
    },
  ];
}

export function resourceRoutes(authz: AuthzService, maxBody: number): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/authz/resources/:namespace/grants',
      auth: 'user',
      doc: {
        summary: "The grants on one object (administrators and the object's managers)",
        query: resourceQuery,
        answers: { 200: z.array(resourceGrantAnswer) },
        errors: ['tenant_mismatch', 'rebac_denied', 'namespace_unsupported', 'object_id_invalid'],
      },
      handle(ctx) {
        const q = parseQuery(ctx.query, resourceQuery);
        const object = { namespace: ctx.params.namespace as string, id: q.object_id };
        const tenant = tenantOf(ctx.req, q.tenant_id);
        authz.requireManager(principalOf(ctx), object, tenant);
        const rows = authz.list({ objectNs: object.namespace, objectId: object.id, tenant });
        return { status: 200, body: rows.map(resourceGrantView) };
      },
    },
    {
      method: 'POST',
      path: '/authz/resources/:namespace/grants',
      auth: 'user',
      doc: {
        summary: 'Grant a subject a relation on one object',
        body: resourceGrantBody,
        answers: { 200: z.looseObject({ status: z.enum(['created', 'exists']), zedtoken: z.string() }) },
        errors: [
          'tenant_mismatch',
          'rebac_denied',
          'namespace_unsupported',
          'object_id_invalid',
          'relation_unsupported',
        ],
      },
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, resourceGrantBody);
        const object = { namespace: ctx.params.namespace as string, id: body.object_id };
        const added = authz.writeAs(principalOf(ctx), [
          { subject: body.subject, relation: body.relation, object, tenantId: tenantOf(ctx.req, body.tenant_id) },
        ]);
        return {
          status: 200,
          body: {
            status: added > 0 ? 'created' : 'exists',
            zedtoken: String(authz.revision),
            relation: body.relation,
            subject: body.subject,
          },
        };
      },
    },
  ];
}
