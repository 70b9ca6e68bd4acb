/**
 * Response shapes of the tuple, subject and resource grant APIs: each a zod schema (what the API document
 * states) and the view that builds it, typed by the schema so the two cannot drift.
 */
import { z } from 'zod';
import type { TupleRow } from './store.ts';

export const flatRowAnswer = z.object({
  subject_namespace: z.string(),
  subject_id: z.string(),
  resource_type: z.string(),
  resource_id: z.string(),
  relation: z.string(),
  tenant_id: z.string(),
});

/** The flat row of GET /auth/tuples/. */
export function flatRow(row: TupleRow): z.output<typeof flatRowAnswer> {
  return {
    subject_namespace: row.subjectNs,
    subject_id: row.subjectId,
    resource_type: row.objectNs,
    resource_id: row.objectId,
    relation: row.relation,
    tenant_id: row.tenant,
  };
}

export const grantAnswer = z.object({
  object_namespace: z.string(),
  object_id: z.string(),
  relation: z.string(),
  tenant_id: z.string(),
});

/** A subject grant (the subjects API). */
export function grantView(row: TupleRow): z.output<typeof grantAnswer> {
  return { object_namespace: row.objectNs, object_id: row.objectId, relation: row.relation, tenant_id: row.tenant };
}

/** A subject of the subjects API: a local user with its attributes (carried into its tokens) and its grants. */
export const subjectAnswer = z.object({
  id: z.string(),
  username: z.string(),
  attributes: z.record(z.string(), z.unknown()),
  source: z.string(),
  grants: z.array(grantAnswer),
  created_at: z.string(),
  updated_at: z.string(),
});

export const resourceGrantAnswer = z.object({
  grant_id: z.string(),
  relation: z.string(),
  subject: z.object({ namespace: z.string(), id: z.string() }),
  tenant_id: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** A resource grant (the resource grants API); grant_id is the tuple's row id. */
export function resourceGrantView(row: TupleRow): z.output<typeof resourceGrantAnswer> {
  return {
    grant_id: String(row.rowid),
    relation: row.relation,
    subject: { namespace: row.subjectNs, id: row.subjectId },
    tenant_id: row.tenant,
    created_at: row.createdAt,
    updated_at: row.createdAt,
  };
}
