/** Deployments: one row per model, app or tool fronted under its runtime URL. */
import { integer, real, sqliteTable, text, uniqueIndex } from '../../gateway/db/drizzle.ts';

export const deployments = sqliteTable(
  'deployments',
  {
    id: text('id').primaryKey(),
    kind: text('kind', { enum: ['model', 'app', 'tool'] }).notNull(),
    name: text('name').notNull(),
    /** http(s) origin, optionally with a base path the runtime path is appended to. */
    upstream: text('upstream').notNull(),
    stripPrefix: integer('strip_prefix', { mode: 'boolean' }).notNull(),
    websocket: integer('websocket', { mode: 'boolean' }).notNull(),
    /** null = the gateway's serving.defaultTimeoutSeconds. */
    timeoutSeconds: real('timeout_seconds'),
    requiresAuth: integer('requires_auth', { mode: 'boolean' }).notNull(),
    forwardAuthorization: integer('forward_authorization', { mode: 'boolean' }).notNull(),
    /** Who sees it beyond its viewers (access.ts): `private`, or `authenticated` = every native-realm user. */
    visibility: text('visibility', { enum: ['private', 'authenticated'] })
      .notNull()
      .default('private'),
    /** Legacy port-based runtime URL; null = none. */
    legacyPort: integer('legacy_port'),
    createdBy: text('created_by').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('deployments_kind_name').on(t.kind, t.name),
    uniqueIndex('deployments_legacy_port').on(t.legacyPort),
  ],
);
