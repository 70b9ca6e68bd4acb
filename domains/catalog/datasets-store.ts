/** Dataset rows behind the narrow interface the dataset and container services need. */
import { and, asc, eq, gt, inArray } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { catalogDatasetSecrets, catalogDatasets } from './schema.ts';

export type DatasetRow = typeof catalogDatasets.$inferSelect;
/** One secret reference's binding: the secret it names, and who bound it (the user a use is authorized against). */
export interface SecretBinding {
  secretId: string;
  boundBy: string;
}
export type DatasetChanges = Partial<Omit<DatasetRow, 'urn' | 'createdAt' | 'createdBy'>>;

export interface DatasetStore {
  byUrn(urn: string): DatasetRow | undefined;
  byUrns(urns: readonly string[]): DatasetRow[];
  list(): DatasetRow[];
  insert(row: DatasetRow): void;
  update(urn: string, changes: DatasetChanges): void;
  delete(urn: string): void;
  /** Member URNs of a container in URN order, strictly after `after`. */
  memberUrns(containerUrn: string, after: string | null, limit: number): string[];
  /** The dataset's secret bindings by reference as written. */
  secretBindings(urn: string): Map<string, SecretBinding>;
  /** Replaces the dataset's secret bindings (the rows go with the dataset when it is deleted). */
  setSecretBindings(urn: string, bindings: ReadonlyMap<string, SecretBinding>): void;
  /** Detaches every member of a container (container deleted). */
  detachAll(containerUrn: string, at: string): void;
  atomically<T>(fn: () => T): T;
}

const IN_CHUNK = 500;

export function createDatasetStore(db: Db): DatasetStore {
  return {
    byUrn: (urn) => db.select().from(catalogDatasets).where(eq(catalogDatasets.urn, urn)).get(),
    byUrns(urns) {
      const rows: DatasetRow[] = [];
      for (let i = 0; i < urns.length; i += IN_CHUNK) {
        rows.push(
          ...db
            .select()
            .from(catalogDatasets)
            .where(inArray(catalogDatasets.urn, urns.slice(i, i + IN_CHUNK)))
            .all(),
        );
      }
      return rows.sort((a, b) => (a.urn < b.urn ? -1 : a.urn > b.urn ? 1 : 0));
    },
    list: () => db.select().from(catalogDatasets).orderBy(asc(catalogDatasets.urn)).all(),
    insert: (row) => void db.insert(catalogDatasets).values(row).run(),
    update: (urn, changes) => void db.update(catalogDatasets).set(changes).where(eq(catalogDatasets.urn, urn)).run(),
    delete: (urn) => void db.delete(catalogDatasets).where(eq(catalogDatasets.urn, urn)).run(),
    memberUrns(containerUrn, after, limit) {
      const inContainer = eq(catalogDatasets.containerUrn, containerUrn);
      return db
        .select({ urn: catalogDatasets.urn })
        .from(catalogDatasets)
        .where(after === null ? inContainer : and(inContainer, gt(catalogDatasets.urn, after)))
        .orderBy(asc(catalogDatasets.urn))
        .limit(limit)
        .all()
        .map((r) => r.urn);
    },
    secretBindings: (urn) =>
      new Map(
        db
          .select()
          .from(catalogDatasetSecrets)
          .where(eq(catalogDatasetSecrets.datasetUrn, urn))
          .all()
          .map((row) => [row.reference, { secretId: row.secretId, boundBy: row.boundBy }]),
      ),
    setSecretBindings(urn, bindings) {
      db.delete(catalogDatasetSecrets).where(eq(catalogDatasetSecrets.datasetUrn, urn)).run();
      const rows = [...bindings].map(([reference, binding]) => ({ datasetUrn: urn, reference, ...binding }));
      for (let i = 0; i < rows.length; i += IN_CHUNK) {
        db.insert(catalogDatasetSecrets)
          .values(rows.slice(i, i + IN_CHUNK))
          .run();
      }
    },
    detachAll: (containerUrn, at) =>
      void db
        .update(catalogDatasets)
        .set({ containerUrn: null, updatedAt: at })
        .where(eq(catalogDatasets.containerUrn, containerUrn))
        .run(),
    atomically: (fn) => db.transaction(() => fn(), { behavior: 'immediate' }),
  };
}
