/** Deployment rows behind the narrow interface the service needs. */
import { and, asc, eq, sql } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { deploymentHealth, deployments, deploymentTraffic } from './schema.ts';

export type DeploymentRow = typeof deployments.$inferSelect;
export type HealthRow = typeof deploymentHealth.$inferSelect;
export type TrafficRow = typeof deploymentTraffic.$inferSelect;

export interface DeploymentStore {
  list(): DeploymentRow[];
  get(id: string): DeploymentRow | undefined;
  findByName(kind: DeploymentRow['kind'], name: string): DeploymentRow | undefined;
  findByLegacyPort(port: number): DeploymentRow | undefined;
  insert(row: DeploymentRow): void;
  delete(id: string): boolean;
  /** The updated row, or undefined when there is none. */
  setVisibility(id: string, visibility: DeploymentRow['visibility']): DeploymentRow | undefined;
  /** The last probe of one deployment, or of all (no id). */
  health(id?: string): HealthRow[];
  /** Kept only while the deployment exists: a probe that ends after its removal writes nothing. */
  recordHealth(row: HealthRow): void;
  /** Requests counted of one deployment, or of all (no id). */
  traffic(id?: string): TrafficRow[];
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
    setVisibility(id, visibility) {
      const update = db.update(deployments).set({ visibility }).where(eq(deployments.id, id));
      return update.returning().get();
    },
    health: (id) =>
      db
        .select()
        .from(deploymentHealth)
        .where(id === undefined ? undefined : eq(deploymentHealth.deploymentId, id))
        .all(),
    recordHealth(row) {
      db.transaction((tx) => {
        if (!exists(tx, row.deploymentId)) return;
        const { deploymentId: _, ...result } = row;
        tx.insert(deploymentHealth)
          .values(row)
          .onConflictDoUpdate({ target: deploymentHealth.deploymentId, set: result })
          .run();
      });
    },
    traffic: (id) =>
      db
        .select()
        .from(deploymentTraffic)
        .where(id === undefined ? undefined : eq(deploymentTraffic.deploymentId, id))
        .all(),
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
