/** Retrieval job rows behind the narrow interface the service needs. */
import { desc, eq } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { retrievalJobs } from './schema.ts';

export type JobRow = typeof retrievalJobs.$inferSelect;
export type JobChanges = Partial<Pick<JobRow, 'status' | 'rows' | 'bytes' | 'chunks' | 'error' | 'updatedAt'>>;

export interface JobStore {
  insert(row: JobRow): void;
  byId(id: string): JobRow | undefined;
  /** Newest first; `ownerId` null = every owner (native administrators). */
  list(ownerId: string | null, limit: number, offset: number): JobRow[];
  update(id: string, changes: JobChanges): void;
}

export function createJobStore(db: Db): JobStore {
  const t = retrievalJobs;
  return {
    insert: (row) => void db.insert(t).values(row).run(),
    byId: (id) => db.select().from(t).where(eq(t.id, id)).get(),
    list(ownerId, limit, offset) {
      const query = db.select().from(t);
      const scoped = ownerId === null ? query : query.where(eq(t.ownerId, ownerId));
      return scoped.orderBy(desc(t.createdAt), desc(t.id)).limit(limit).offset(offset).all();
    },
    update: (id, changes) => void db.update(t).set(changes).where(eq(t.id, id)).run(),
  };
}
