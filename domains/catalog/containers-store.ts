/** Container rows behind the narrow interface the container service needs. */
import { asc, eq } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { catalogContainers } from './schema.ts';

export type ContainerRow = typeof catalogContainers.$inferSelect;
export type ContainerChanges = Partial<Omit<ContainerRow, 'urn' | 'createdAt'>>;

export interface ContainerStore {
  byUrn(urn: string): ContainerRow | undefined;
  list(): ContainerRow[];
  children(urn: string): string[];
  insert(row: ContainerRow): void;
  update(urn: string, changes: ContainerChanges): void;
  /** Deletes the container and detaches its sub-containers. */
  delete(urn: string, at: string): void;
}

export function createContainerStore(db: Db): ContainerStore {
  return {
    byUrn: (urn) => db.select().from(catalogContainers).where(eq(catalogContainers.urn, urn)).get(),
    list: () => db.select().from(catalogContainers).orderBy(asc(catalogContainers.urn)).all(),
    children: (urn) =>
      db
        .select({ urn: catalogContainers.urn })
        .from(catalogContainers)
        .where(eq(catalogContainers.parentUrn, urn))
        .orderBy(asc(catalogContainers.urn))
        .all()
        .map((r) => r.urn),
    insert: (row) => void db.insert(catalogContainers).values(row).run(),
    update: (urn, changes) =>
      void db.update(catalogContainers).set(changes).where(eq(catalogContainers.urn, urn)).run(),
    delete(urn, at) {
      db.update(catalogContainers)
        .set({ parentUrn: null, updatedAt: at })
        .where(eq(catalogContainers.parentUrn, urn))
        .run();
      db.delete(catalogContainers).where(eq(catalogContainers.urn, urn)).run();
    },
  };
}
