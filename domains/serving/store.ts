/** Deployment rows behind the narrow interface the service needs. */
import { and, asc, eq, gte, lt, notInArray, sql } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import {
  deploymentHealth,
  deploymentReplicaHealth,
  deployments,
  deploymentTraffic,
  deploymentTrafficMinutes,
  type RateLimitRecord,
  rateLimitBuckets,
} from './schema.ts';

export type DeploymentRow = typeof deployments.$inferSelect;
export type HealthRow = typeof deploymentHealth.$inferSelect;
export type TrafficRow = typeof deploymentTraffic.$inferSelect;
export type ReplicaHealthRow = typeof deploymentReplicaHealth.$inferSelect;
export type MinuteRow = typeof deploymentTrafficMinutes.$inferSelect;

export interface DeploymentStore {
  list(): DeploymentRow[];
  get(id: string): DeploymentRow | undefined;
  findByName(kind: DeploymentRow['kind'], name: string): DeploymentRow | undefined;
  findByLegacyPort(port: number): DeploymentRow | undefined;
  insert(row: DeploymentRow): void;
  delete(id: string): boolean;
  /** The updated row, or undefined when there is none. */
  update(id: string, set: Partial<Omit<DeploymentRow, 'id'>>): DeploymentRow | undefined;
  /** The last probe of one deployment, or of all (no id). */
  health(id?: string): HealthRow[];
  /** Each replica's judged probes, of one deployment or of all (no id). */
  replicaHealth(id?: string): ReplicaHealthRow[];
  /**
   * One probe round of a deployment: its summary and each replica's row, replicas no longer listed dropped. Kept
   * only while the deployment exists: a probe that ends after its removal writes nothing.
   */
  recordHealth(row: HealthRow, replicas: readonly ReplicaHealthRow[]): void;
  /** Requests counted of one deployment, or of all (no id). */
  traffic(id?: string): TrafficRow[];
  /**
   * Refills the caller's bucket to `nowMs` and takes `want` tokens, or one when fewer are left, or none: one atomic
   * statement on either engine. Answers what was granted and what is left.
   */
  takeTokens(
    deploymentId: string,
    caller: string,
    want: number,
    limit: RateLimitRecord,
    nowMs: number,
  ): { granted: number; tokens: number };
  /** Drops buckets not touched since `beforeMs`. */
  pruneBuckets(beforeMs: number): void;
  /** Adds each row's counts to its (deployment, minute) in one transaction; removed deployments are skipped. */
  addMinutes(rows: readonly MinuteRow[]): void;
  /** One deployment's minutes from `sinceMinute` on. */
  minutes(id: string, sinceMinute: number): MinuteRow[];
  /** Drops minutes before `beforeMinute`. */
  pruneMinutes(beforeMinute: number): void;
  /** Adds each delta to its deployment's count in one transaction; removed deployments are skipped. */
  addTraffic(deltas: readonly (readonly [id: string, requests: number])[], at: string): void;
}

export function createDeploymentStore(db: Db): DeploymentStore {
  type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
  const exists = (tx: Tx, id: string) =>
    tx.select({ id: deployments.id }).from(deployments).where(eq(deployments.id, id)).get() !== undefined;
  return {
    list: () => db.select().from(deployments).orderBy(asc(deployments.createdAt), asc(deployments.id)).all(),
    get: (id) => db.select().from(deployments).where(eq(deployments.id, id)).get(),
    findByName: (kind, name) =>
      db
        .select()
        .from(deployments)
        .where(and(eq(deployments.kind, kind), eq(deployments.name, name)))
        .get(),
    findByLegacyPort: (port) => db.select().from(deployments).where(eq(deployments.legacyPort, port)).get(),
    insert: (row) => void db.insert(deployments).values(row).run(),
    delete: (id) => db.delete(deployments).where(eq(deployments.id, id)).run().changes > 0,
    update: (id, set) => db.update(deployments).set(set).where(eq(deployments.id, id)).returning().get(),
    health: (id) =>
      db
        .select()
        .from(deploymentHealth)
        .where(id === undefined ? undefined : eq(deploymentHealth.deploymentId, id))
        .all(),
    replicaHealth: (id) =>
      db
        .select()
        .from(deploymentReplicaHealth)
        .where(id === undefined ? undefined : eq(deploymentReplicaHealth.deploymentId, id))
        .all(),
    recordHealth(row, replicas) {
      db.transaction((tx) => {
        if (!exists(tx, row.deploymentId)) return;
        const { deploymentId: _, ...result } = row;
        tx.insert(deploymentHealth)
          .values(row)
          .onConflictDoUpdate({ target: deploymentHealth.deploymentId, set: result })
          .run();
        const listed = replicas.map((r) => r.replica);
        tx.delete(deploymentReplicaHealth)
          .where(
            and(
              eq(deploymentReplicaHealth.deploymentId, row.deploymentId),
              listed.length > 0 ? notInArray(deploymentReplicaHealth.replica, listed) : undefined,
            ),
          )
          .run();
        for (const replica of replicas) {
          const { deploymentId: _id, replica: _url, ...judged } = replica;
          tx.insert(deploymentReplicaHealth)
            .values(replica)
            .onConflictDoUpdate({
              target: [deploymentReplicaHealth.deploymentId, deploymentReplicaHealth.replica],
              set: judged,
            })
            .run();
        }
      });
    },
    traffic: (id) =>
      db
        .select()
        .from(deploymentTraffic)
        .where(id === undefined ? undefined : eq(deploymentTraffic.deploymentId, id))
        .all(),
    takeTokens(deploymentId, caller, want, limit, nowMs) {
      const { tokens, refilledAt } = rateLimitBuckets;
      const burst = limit.burst;
      const refilled = sql`(${tokens} + (${nowMs} - ${refilledAt}) * ${limit.requests_per_second} / 1000.0)`;
      const available = sql`(CASE WHEN ${refilled} > ${burst} THEN ${burst} ELSE ${refilled} END)`;
      const granted = sql`(CASE WHEN ${available} >= ${want} THEN ${want} WHEN ${available} >= 1 THEN 1 ELSE 0 END)`;
      const first = Math.min(want, burst);
      return db
        .insert(rateLimitBuckets)
        .values({ deploymentId, caller, tokens: burst - first, granted: first, refilledAt: nowMs })
        .onConflictDoUpdate({
          target: [rateLimitBuckets.deploymentId, rateLimitBuckets.caller],
          set: { tokens: sql`${available} - ${granted}`, granted, refilledAt: nowMs },
        })
        .returning({ granted: rateLimitBuckets.granted, tokens: rateLimitBuckets.tokens })
        .get() as { granted: number; tokens: number };
    },
    pruneBuckets: (beforeMs) => void db.delete(rateLimitBuckets).where(lt(rateLimitBuckets.refilledAt, beforeMs)).run(),
    addMinutes(rows) {
      const t = deploymentTrafficMinutes;
      db.transaction((tx) => {
        for (const row of rows) {
          if (!exists(tx, row.deploymentId)) continue;
          const { deploymentId: _, minute: __, ...counts } = row;
          // Every process adds its own: each sum is taken in SQL, never read-modify-written.
          const added = Object.fromEntries(
            Object.entries(counts).map(([key, value]) => [key, sql`${t[key as keyof typeof counts]} + ${value}`]),
          );
          tx.insert(t)
            .values(row)
            .onConflictDoUpdate({ target: [t.deploymentId, t.minute], set: added })
            .run();
        }
      });
    },
    minutes: (id, sinceMinute) =>
      db
        .select()
        .from(deploymentTrafficMinutes)
        .where(and(eq(deploymentTrafficMinutes.deploymentId, id), gte(deploymentTrafficMinutes.minute, sinceMinute)))
        .all(),
    pruneMinutes: (beforeMinute) =>
      void db.delete(deploymentTrafficMinutes).where(lt(deploymentTrafficMinutes.minute, beforeMinute)).run(),
    addTraffic(deltas, at) {
      db.transaction((tx) => {
        for (const [deploymentId, requests] of deltas) {
          if (!exists(tx, deploymentId)) continue;
          tx.insert(deploymentTraffic)
            .values({ deploymentId, requests, lastRequestAt: at })
            .onConflictDoUpdate({
              target: deploymentTraffic.deploymentId,
              // Every process adds its own share: the sum is taken in SQL, never read-modify-written.
              set: { requests: sql`${deploymentTraffic.requests} + ${requests}`, lastRequestAt: at },
            })
            .run();
        }
      });
    },
  };
}
