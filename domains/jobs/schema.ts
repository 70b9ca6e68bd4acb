/**
 * Tables of the jobs domain: one row per job with every stored attribute of
 * the job record (and what a restart needs to re-queue a PENDING job), and the
 * single execution-gate binding.
 */
import { index, integer, sqliteTable, text, uniqueIndex } from '../../gateway/db/drizzle.ts';

export interface ApprovedPackage {
  name: string;
  version: string;
  sha256: string[];
}

export interface DelegatedAccess {
  datasets?: { urn: string; operations: string[] }[];
  models?: { deployment_id: string; operations: string[] }[];
}

/**
 * The caps a local job runs under, as its record shows them: `cgroup` says which cgroup layout binds memory and
 * processes (null: the job runs without those two caps).
 */
export interface JobLimits {
  readonly cgroup: 'v1' | 'v2' | null;
  readonly memoryBytes: number | null;
  readonly processes: number | null;
  /** Size of the private /tmp; null without a sandbox. */
  readonly tmpBytes: number | null;
  readonly network: 'host' | 'none';
}

export const JOB_STATUSES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'STOPPED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const jobs = sqliteTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    /** Which runtime owns the job (`local` or `ray`), so a config change never confuses old records. */
    runtime: text('runtime').notNull(),
    runtimeJobId: text('runtime_job_id').notNull(),
    /**
     * The cluster node whose local runtime runs the job (its processes and log files live there); null for a
     * one-node gateway and for runtimes every node reaches (Ray).
     */
    ownerNode: text('owner_node'),
    status: text('status', { enum: JOB_STATUSES }).notNull(),
    source: text('source', { enum: ['local', 'mesh'] }).notNull(),
    sourceClusterId: text('source_cluster_id'),
    sourceClusterName: text('source_cluster_name'),
    userId: text('user_id').notNull(),
    tenantId: text('tenant_id').notNull(),
    /** The originating identity (`audit_actor` on the wire): sub, or external_id for mesh callers. */
    auditActor: text('audit_actor').notNull(),
    clusterSelector: text('cluster_selector').notNull(),
    entrypoint: text('entrypoint').notNull(),
    /** Only `env_vars` survives; kept so a queued job can be re-queued after a restart. */
    envVars: text('env_vars', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    /** The submitter's attributes, for PLATFORM_USER_ATTRS when a queued job starts after a restart. */
    userAttrs: text('user_attrs', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    metadata: text('metadata', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    delegatedAccess: text('delegated_access', { mode: 'json' }).$type<DelegatedAccess>(),
    pythonPackages: text('python_packages', { mode: 'json' }).$type<ApprovedPackage[]>().notNull(),
    /** The caps the local runtime set when the job started; null before, and for runtimes that set none (Ray). */
    limits: text('limits', { mode: 'json' }).$type<JobLimits>(),
    timeoutSeconds: integer('timeout_seconds'),
    timedOut: integer('timed_out', { mode: 'boolean' }).notNull().default(false),
    errorType: text('error_type'),
    errorMessage: text('error_message'),
    submittedAt: text('submitted_at').notNull(),
    startedAt: text('started_at'),
    endedAt: text('ended_at'),
    /** Set when the retention sweep removed the logs (then /logs and /result answer 410). */
    logsPurgedAt: text('logs_purged_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    index('jobs_user_submitted').on(t.userId, t.submittedAt),
    index('jobs_status').on(t.status),
    uniqueIndex('jobs_runtime_job_id').on(t.runtimeJobId),
  ],
);

export const executionGate = sqliteTable('execution_gate', {
  /** Always 1: one binding per cluster. */
  id: integer('id').primaryKey(),
  type: text('type').notNull(),
  config: text('config', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  boundBy: text('bound_by').notNull(),
  boundAt: text('bound_at').notNull(),
});

/**
 * The forwarding shim's shadow: a job this cluster forwarded through the mesh
 * on a local submit with a non-local selector. Local status/result/logs/
 * cancel for `jobId` (the peer's id) are proxied to `federationId`, for the
 * submitter only.
 */
export const jobShadows = sqliteTable('job_shadows', {
  jobId: text('job_id').primaryKey(),
  federationId: text('federation_id').notNull(),
  /** The selector the caller gave (echoed as cluster_selector). */
  clusterSelector: text('cluster_selector').notNull(),
  /** The local caller who submitted it (a local user id, or the shared-realm sub). */
  userId: text('user_id').notNull(),
  createdAt: text('created_at').notNull(),
});
