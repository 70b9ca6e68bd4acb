/**
 * Deployments: one row per model, app or tool fronted under its runtime URL; beside them what the gateway observed
 * of each: the upstream's last health probe and the requests proxied to it.
 */
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
    /** Probed by an HTTP GET of this path below the upstream URL; null = a TCP connect (health.ts). */
    healthPath: text('health_path'),
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

/** The last probe of each deployment's upstream, written by the process that probes (health.ts). */
export const deploymentHealth = sqliteTable('deployment_health', {
  deploymentId: text('deployment_id')
    .primaryKey()
    .references(() => deployments.id, { onDelete: 'cascade' }),
  healthy: integer('healthy', { mode: 'boolean' }).notNull(),
  /** Why it is unhealthy (a stable reason), null when healthy. */
  reason: text('reason'),
  /** The failing layer's code (ECONNREFUSED, HTTP 503): no address, nothing secret. */
  detail: text('detail'),
  checkedAt: text('checked_at').notNull(),
});

/** Requests proxied to each deployment since it was registered, summed over every process (traffic.ts). */
export const deploymentTraffic = sqliteTable('deployment_traffic', {
  deploymentId: text('deployment_id')
    .primaryKey()
    .references(() => deployments.id, { onDelete: 'cascade' }),
  requests: integer('requests').notNull(),
  lastRequestAt: text('last_request_at').notNull(),
});
