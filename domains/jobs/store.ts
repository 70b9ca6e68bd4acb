/** Job records and the gate binding behind narrow interfaces. */
import { and, desc, eq, inArray, isNotNull, isNull, lte, ne, type SQL, sql } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { executionGate, type JobStatus, jobShadows, jobs } from './schema.ts';

export type JobRow = typeof jobs.$inferSelect;
export type JobPatch = Partial<Omit<JobRow, 'id' | 'createdAt'>>;
export type GateRow = typeof executionGate.$inferSelect;
export type ShadowRow = typeof jobShadows.$inferSelect;

export const ACTIVE_STATUSES: readonly JobStatus[] = ['PENDING', 'RUNNING'];

export interface JobListFilter {
  /** Only these users' jobs; undefined = everyone's (native admins). */
  userId?: string | undefined;
  sourceClusterId?: string | undefined;
  limit: number;
  offset: number;
}

export interface JobStore {
  insert(row: JobRow): void;
  get(id: string): JobRow | undefined;
  getByRuntimeId(runtimeJobId: string): JobRow | undefined;
  /** Applies the patch only while the job is still active, so a terminal record never changes. */
  updateActive(id: string, patch: JobPatch): JobRow | undefined;
  update(id: string, patch: JobPatch): void;
  delete(id: string): void;
  list(filter: JobListFilter): JobRow[];
  active(runtime: string): JobRow[];
  /** Active jobs of a runtime other than `runtime` (the configured one changed). */
  activeOtherThan(runtime: string): JobRow[];
  activeOf(userId: string): JobRow[];
  /** Active jobs whose local runtime is on the node (a cluster node that stopped). */
  activeOwnedBy(nodeId: string): JobRow[];
  /** Terminal jobs that ended at or before `cutoff` and still have logs. */
  expiredLogs(cutoff: string): JobRow[];
  /** How many jobs are in each state, per runtime (the jobs_status index serves it). */
  countByState(): { status: string; runtime: string; count: number }[];
}

export function createJobStore(db: Db): JobStore {
  return {
    insert: (row) => void db.insert(jobs).values(row).run(),
    countByState: () =>
      db
        .select({ status: jobs.status, runtime: jobs.runtime, count: sql<number>`count(*)` })
        .from(jobs)
        .groupBy(jobs.status, jobs.runtime)
        .all(),
    get: (id) => db.select().from(jobs).where(eq(jobs.id, id)).get(),
    getByRuntimeId: (runtimeJobId) => db.select().from(jobs).where(eq(jobs.runtimeJobId, runtimeJobId)).get(),
    updateActive: (id, patch) =>
      db
        .update(jobs)
        .set(patch)
        .where(and(eq(jobs.id, id), inArray(jobs.status, [...ACTIVE_STATUSES])))
        .returning()
        .get(),
    update: (id, patch) => void db.update(jobs).set(patch).where(eq(jobs.id, id)).run(),
    delete: (id) => void db.delete(jobs).where(eq(jobs.id, id)).run(),
    list(filter) {
      const conditions: SQL[] = [];
      if (filter.userId !== undefined) conditions.push(eq(jobs.userId, filter.userId));
      if (filter.sourceClusterId !== undefined) conditions.push(eq(jobs.sourceClusterId, filter.sourceClusterId));
      return db
        .select()
        .from(jobs)
        .where(and(...conditions))
        .orderBy(desc(jobs.submittedAt), desc(sql`rowid`))
        .limit(filter.limit)
        .offset(filter.offset)
        .all();
    },
    active: (runtime) =>
      db
        .select()
        .from(jobs)
        .where(and(eq(jobs.runtime, runtime), inArray(jobs.status, [...ACTIVE_STATUSES])))
        .orderBy(jobs.submittedAt)
        .all(),
    activeOtherThan: (runtime) =>
      db
        .select()
        .from(jobs)
        .where(and(ne(jobs.runtime, runtime), inArray(jobs.status, [...ACTIVE_STATUSES])))
        .all(),
    activeOf: (userId) =>
      db
        .select()
        .from(jobs)
        .where(and(eq(jobs.userId, userId), inArray(jobs.status, [...ACTIVE_STATUSES])))
        .all(),
    activeOwnedBy: (nodeId) =>
      db
        .select()
        .from(jobs)
        .where(and(eq(jobs.ownerNode, nodeId), inArray(jobs.status, [...ACTIVE_STATUSES])))
        .all(),
    expiredLogs: (cutoff) =>
      db
        .select()
        .from(jobs)
        .where(and(isNotNull(jobs.endedAt), lte(jobs.endedAt, cutoff), isNull(jobs.logsPurgedAt)))
        .all(),
  };
}

export interface GateStore {
  get(): GateRow | undefined;
  put(row: Omit<GateRow, 'id'>): void;
  clear(): void;
}

export function createGateStore(db: Db): GateStore {
  return {
    get: () => db.select().from(executionGate).where(eq(executionGate.id, 1)).get(),
    put: (row) =>
      void db
        .insert(executionGate)
        .values({ id: 1, ...row })
        .onConflictDoUpdate({ target: executionGate.id, set: row })
        .run(),
    clear: () => void db.delete(executionGate).where(eq(executionGate.id, 1)).run(),
  };
}

/** Forwarded submissions (the forwarding shim): the peer's job id → the federation it runs on. */
export interface ShadowStore {
  insert(row: ShadowRow): void;
  get(jobId: string): ShadowRow | undefined;
}

export function createShadowStore(db: Db): ShadowStore {
  return {
    // A peer reusing a job id (it never should: ids are UUIDs) overwrites the old pointer rather than failing the
    // submit.
    insert: (row) =>
      void db.insert(jobShadows).values(row).onConflictDoUpdate({ target: jobShadows.jobId, set: row }).run(),
    get: (jobId) => db.select().from(jobShadows).where(eq(jobShadows.jobId, jobId)).get(),
  };
}
