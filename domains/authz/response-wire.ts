/** Response shapes of the tuple, subject and resource grant APIs. */
import type { TupleRow } from './store.ts';

/** The flat row of GET /auth/tuples/. */
export function flatRow(row: TupleRow) {
  return {
    subject_namespace: row.subjectNs,
    subject_id: row.subjectId,
    resource_type: row.objectNs,
    resource_id: row.objectId,
    relation: row.relation,
    tenant_id: row.tenant,
  };
}

/** A subject grant (the subjects API). */
export function grantView(row: TupleRow) {
  return { object_namespace: row.objectNs, object_id: row.objectId, relation: row.relation, tenant_id: row.tenant };
}

/** A resource grant (the resource grants API); grant_id is the tuple's row id. */
export function resourceGrantView(row: TupleRow) {
  return {
    grant_id: String(row.rowid),
    relation: row.relation,
    subject: { namespace: row.subjectNs, id: row.subjectId },
    tenant_id: row.tenant,
    created_at: row.createdAt,
    updated_at: row.createdAt,
  };
}
