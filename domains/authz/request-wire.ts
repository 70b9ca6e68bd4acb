/**
 * The tuple encodings on the wire ("the three tuple
 * encodings") and their request schemas: nested `{namespace,id}` for
 * /auth/tuples and /auth/check, flat `object_namespace/object_id/relation`
 * for subject grants. Both normalize to one TupleInput. Namespace values are
 * not restricted here, so an unknown one reaches the model check and gets
 * 403 namespace_unsupported rather than a generic 422.
 */
import { z } from 'zod';
import type { NodeRequest } from '../../gateway/http/context.ts';
import { DEFAULT_TENANT } from '../../gateway/principal.ts';
import { ATTRIBUTE_NAME, ATTRIBUTE_NAME_RULE } from '../auth/index.ts';
import { AuthzErrors } from './errors.ts';
import type { TupleInput } from './service.ts';

const name = z.string().min(1).max(64);
const objectId = z.string().max(1024);
const tenantId = z.string().min(1).max(128).optional();
const ref = z.object({ namespace: name, id: objectId });

export const tupleBody = z.object({ subject: ref, relation: name, object: ref, tenant_id: tenantId });
export const tupleDeleteBody = tupleBody.extend({ relation: name.nullish() });
export const objectDeleteBody = z.object({ object: ref, tenant_id: tenantId });

export const listQuery = z.object({
  tenant: tenantId,
  tenant_id: tenantId,
  object_namespace: name.optional(),
  object_id: objectId.optional(),
  subject_namespace: name.optional(),
  subject_id: objectId.optional(),
  relation: name.optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(1000),
  offset: z.coerce.number().int().min(0).default(0),
});

export const grantBody = z.object({ object_namespace: name, object_id: objectId, relation: name, tenant_id: tenantId });
export const resourceGrantBody = z.object({ object_id: objectId, subject: ref, relation: name, tenant_id: tenantId });

const attributeName = z.string().regex(ATTRIBUTE_NAME, ATTRIBUTE_NAME_RULE);
export const subjectBody = z.object({
  attributes: z.record(attributeName, z.json()).optional(),
  password: z.string().min(1).max(1024).optional(),
});

/** Body `tenant_id` or `X-Tenant-Id` (the SDK may send both); they must agree. */
export function tenantOf(req: NodeRequest, bodyTenant: string | undefined): string {
  const header = req.headers['x-tenant-id'];
  const fromHeader = typeof header === 'string' && header !== '' ? header : undefined;
  if (bodyTenant !== undefined && fromHeader !== undefined && bodyTenant !== fromHeader) {
    throw AuthzErrors.make.tenant_mismatch({ body: bodyTenant, header: fromHeader });
  }
  return bodyTenant ?? fromHeader ?? DEFAULT_TENANT;
}

/** The flat grant form (subjects API) as a tuple without its subject. */
export function fromGrant(grant: z.infer<typeof grantBody>, tenant: string): Omit<TupleInput, 'subject'> {
  return {
    relation: grant.relation,
    object: { namespace: grant.object_namespace, id: grant.object_id },
    tenantId: tenant,
  };
}
