/** Deployment rows behind the narrow interface the service needs. */
import { and, asc, eq } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { deployments } from './schema.ts';

export type DeploymentRow = typeof deployments.$inferSelect;

export interface DeploymentStore {
  list(): DeploymentRow[];
  get(id: string): DeploymentRow | undefined;
  findByName(kind: DeploymentRow['kind'], name: string): DeploymentRow | undefined;
  findByLegacyPort(port: number): DeploymentRow | undefined;
  insert(row: DeploymentRow): void;
  delete(id: string): boolean;
  /** The updated row, or undefined when there is none. */
  setVisibility(id: string, visibility: DeploymentRow['visibility']): DeploymentRow | undefined;
}

export function createDeploymentStore(db: Db): DeploymentStore {
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
  };
}
