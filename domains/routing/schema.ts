/** The routing configuration: one row, replaced as a whole on every accepted PATCH. */
import { integer, sqliteTable, text } from '../../gateway/db/drizzle.ts';

export const routingConfig = sqliteTable('routing_config', {
  id: integer('id').primaryKey(),
  /** null = derived from PLATFORM_ORIGIN. */
  baseHost: text('base_host'),
  servicePrefixes: text('service_prefixes', { mode: 'json' }).$type<Record<string, string>>().notNull(),
  enabledServices: text('enabled_services', { mode: 'json' }).$type<Record<string, boolean>>().notNull(),
  updatedAt: text('updated_at').notNull(),
});
