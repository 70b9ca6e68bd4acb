/** Relationship tuples: (subject, relation, object) within a tenant. */
import { index, sqliteTable, text, uniqueIndex } from '../../gateway/db/drizzle.ts';

export const tuples = sqliteTable(
  'authz_tuples',
  {
    subjectNs: text('subject_ns').notNull(),
    subjectId: text('subject_id').notNull(),
    relation: text('relation').notNull(),
    objectNs: text('object_ns').notNull(),
    objectId: text('object_id').notNull(),
    tenant: text('tenant').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('authz_tuples_unique').on(t.subjectNs, t.subjectId, t.objectNs, t.objectId, t.relation, t.tenant),
    index('authz_tuples_object').on(t.objectNs, t.objectId, t.tenant),
  ],
);
