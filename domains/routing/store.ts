import { eq } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { routingConfig } from './schema.ts';

export type RoutingRow = typeof routingConfig.$inferSelect;

export interface RoutingStore {
  load(): RoutingRow | undefined;
  save(row: Omit<RoutingRow, 'id'>): void;
}

export function createRoutingStore(db: Db): RoutingStore {
  return {
    load: () => db.select().from(routingConfig).where(eq(routingConfig.id, 1)).get(),
    save: (row) =>
      void db
        .insert(routingConfig)
        .values({ id: 1, ...row })
        .onConflictDoUpdate({ target: routingConfig.id, set: row })
        .run(),
  };
}
