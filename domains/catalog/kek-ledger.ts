/**
 * The KEK ledger (catalog_keks): which versions exist and their state.
 * Rotation progress lives here and in each secret's kek_version, written in
 * small transactions, so an interrupted rotation resumes where it stopped.
 */
import { eq, inArray } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { catalogKeks } from './schema.ts';

export type KekRow = typeof catalogKeks.$inferSelect;

export interface KekLedger {
  list(): KekRow[];
  active(): KekRow | undefined;
  /** One transaction: the current active version becomes retiring, `version` becomes active. */
  activate(version: number, check: string, at: string): void;
  /** retiring → retired; returns the versions retired. */
  retire(at: string): number[];
}

export function createKekLedger(db: Db): KekLedger {
  return {
    list: () => db.select().from(catalogKeks).orderBy(catalogKeks.version).all(),
    active: () => db.select().from(catalogKeks).where(eq(catalogKeks.state, 'active')).get(),
    activate(version, check, at) {
      db.transaction(
        (tx) => {
          tx.update(catalogKeks).set({ state: 'retiring' }).where(eq(catalogKeks.state, 'active')).run();
          tx.insert(catalogKeks).values({ version, state: 'active', check, createdAt: at }).run();
        },
        { behavior: 'immediate' },
      );
    },
    retire(at) {
      const rows = db
        .select({ version: catalogKeks.version })
        .from(catalogKeks)
        .where(eq(catalogKeks.state, 'retiring'))
        .all();
      const versions = rows.map((r) => r.version);
      if (versions.length > 0) {
        db.update(catalogKeks)
          .set({ state: 'retired', retiredAt: at })
          .where(inArray(catalogKeks.version, versions))
          .run();
      }
      return versions;
    },
  };
}
