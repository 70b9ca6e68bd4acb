/** Secret rows behind the narrow interface the secrets service and rotation need. */
import { and, count, eq, ne } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { catalogSecrets } from './schema.ts';

export type SecretRow = typeof catalogSecrets.$inferSelect;

export interface SecretStore {
  byUrn(urn: string): SecretRow | undefined;
  byId(id: string): SecretRow | undefined;
  list(): SecretRow[];
  /** Insert, or replace an existing row's content (clobber); the id and created_at of a replaced row stay. */
  upsert(row: SecretRow): void;
  delete(urn: string): boolean;
  /** Rows whose data key is wrapped by a version other than `version`. */
  notOn(version: number, limit: number): Pick<SecretRow, 'urn' | 'wrappedKey' | 'kekVersion'>[];
  countNotOn(version: number): number;
  /** Compare-and-set: replaces the wrapped key only if the row is still on `from`. */
  rewrap(urn: string, from: number, wrappedKey: Buffer, to: number): boolean;
  /** Runs `fn` in one immediate (write-locking) transaction. */
  atomically<T>(fn: () => T): T;
}

export function createSecretStore(db: Db): SecretStore {
  return {
    byUrn: (urn) => db.select().from(catalogSecrets).where(eq(catalogSecrets.urn, urn)).get(),
    byId: (id) => db.select().from(catalogSecrets).where(eq(catalogSecrets.id, id)).get(),
    list: () => db.select().from(catalogSecrets).orderBy(catalogSecrets.urn).all(),
    upsert: (row) => {
      const { urn: _key, id: _id, createdAt: _created, ...changes } = row;
      db.insert(catalogSecrets).values(row).onConflictDoUpdate({ target: catalogSecrets.urn, set: changes }).run();
    },
    delete: (urn) => db.delete(catalogSecrets).where(eq(catalogSecrets.urn, urn)).run().changes > 0,
    notOn: (version, limit) =>
      db
        .select({
          urn: catalogSecrets.urn,
          wrappedKey: catalogSecrets.wrappedKey,
          kekVersion: catalogSecrets.kekVersion,
        })
        .from(catalogSecrets)
        .where(ne(catalogSecrets.kekVersion, version))
        .limit(limit)
        .all(),
    countNotOn: (version) =>
      db.select({ n: count() }).from(catalogSecrets).where(ne(catalogSecrets.kekVersion, version)).get()?.n ?? 0,
    rewrap: (urn, from, wrappedKey, to) =>
      db
        .update(catalogSecrets)
        .set({ wrappedKey, kekVersion: to })
        .where(and(eq(catalogSecrets.urn, urn), eq(catalogSecrets.kekVersion, from)))
        .run().changes > 0,
    atomically: (fn) => db.transaction(() => fn(), { behavior: 'immediate' }),
  };
}
