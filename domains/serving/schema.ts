/**
 * Deployments: one row per model, app or tool fronted under its runtime URL; beside them what the gateway observed
 * of each: the upstream's last health probe and the requests proxied to it.
 */
import { integer, primaryKey, real, sqliteTable, text, uniqueIndex } from '../../gateway/db/drizzle.ts';

/** One replica of a deployment: an upstream URL and its share of the traffic. */
export interface ReplicaRecord {
  url: string;
  weight: number;
}

/** A caller's allowance on one deployment: a token bucket (rate-limit.ts). */
export interface RateLimitRecord {
  requests_per_second: number;
  burst: number;
}

export const deployments = sqliteTable(
  'deployments',
  {
    id: text('id').primaryKey(),
    kind: text('kind', { enum: ['model', 'app', 'tool'] }).notNull(),
    name: text('name').notNull(),
    /** http(s) origin, optionally with a base path the runtime path is appended to; the first replica's. */
    upstream: text('upstream').notNull(),
    /** Every replica (balancer.ts); null = the one `upstream`, weight 1. */
    upstreams: text('upstreams', { mode: 'json' }).$type<ReplicaRecord[]>(),
    /** `cookie` keeps a browser on one replica while it stays in rotation. */
    affinity: text('affinity', { enum: ['none', 'cookie'] })
      .notNull()
      .default('none'),
    /** Further attempts after a failure that is safe to retry (retry.ts); null = the default, 2. */
    retries: integer('retries'),
    /** Requests in flight per process (fair-share.ts); null = serving.maxConcurrentRequests. */
    maxConcurrent: integer('max_concurrent'),
    /** Longest wait for a slot; null = serving.queueTimeoutMs. */
    queueTimeoutMs: integer('queue_timeout_ms'),
    /** Per caller; null = none. */
    rateLimit: text('rate_limit', { mode: 'json' }).$type<RateLimitRecord>(),
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

/**
 * Each replica's probe results as the prober (the primary) judged them (health.ts): `ejected` after
 * `serving.healthUnhealthyThreshold` failures in a row, back after `serving.healthHealthyThreshold` successes.
 * Every process reads `ejected` to leave the replica out of its balancing.
 */
export const deploymentReplicaHealth = sqliteTable(
  'deployment_replica_health',
  {
    deploymentId: text('deployment_id')
      .notNull()
      .references(() => deployments.id, { onDelete: 'cascade' }),
    replica: text('replica').notNull(),
    healthy: integer('healthy', { mode: 'boolean' }).notNull(),
    ejected: integer('ejected', { mode: 'boolean' }).notNull(),
    /** Probes in a row with the same outcome as `healthy`. */
    streak: integer('streak').notNull(),
    reason: text('reason'),
    detail: text('detail'),
    checkedAt: text('checked_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.deploymentId, t.replica] })],
);

/**
 * Per-caller token buckets of deployments with a `rate_limit`, shared by every process and node on the database
 * (rate-limit.ts). `tokens` as of `refilled_at` (ms since the epoch); a bucket idle for an hour is pruned (it has
 * refilled: the same as none).
 */
export const rateLimitBuckets = sqliteTable(
  'rate_limit_buckets',
  {
    deploymentId: text('deployment_id')
      .notNull()
      .references(() => deployments.id, { onDelete: 'cascade' }),
    caller: text('caller').notNull(),
    tokens: real('tokens').notNull(),
    /** What the last take granted (rate-limit.ts reads it back from the same statement). */
    granted: real('granted').notNull(),
    refilledAt: real('refilled_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.deploymentId, t.caller] })],
);

/**
 * Each deployment's traffic per minute, every process adding its own (series.ts): requests, the answers that were
 * 4xx and 5xx, and how long the answers' heads took, counted in fixed buckets (the column names their upper bound,
 * in ms) so percentiles survive the sum. Kept for an hour.
 */
export const deploymentTrafficMinutes = sqliteTable(
  'deployment_traffic_minutes',
  {
    deploymentId: text('deployment_id')
      .notNull()
      .references(() => deployments.id, { onDelete: 'cascade' }),
    /** Minutes since the epoch. */
    minute: integer('minute').notNull(),
    requests: integer('requests').notNull(),
    clientErrors: integer('client_errors').notNull(),
    serverErrors: integer('server_errors').notNull(),
    le10: integer('le_10').notNull(),
    le50: integer('le_50').notNull(),
    le100: integer('le_100').notNull(),
    le250: integer('le_250').notNull(),
    le500: integer('le_500').notNull(),
    le1000: integer('le_1000').notNull(),
    le2500: integer('le_2500').notNull(),
    le10000: integer('le_10000').notNull(),
    /** Heads that took longer than 10 s. */
    over: integer('over').notNull(),
  },
  (t) => [primaryKey({ columns: [t.deploymentId, t.minute] })],
);
