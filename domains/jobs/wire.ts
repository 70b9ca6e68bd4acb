/**
 * Job records on the wire: superset bodies carrying both
 * `id`/`job_id` and `runtime_job_id`/`ray_job_id` (both names, so old and new clients each find theirs),
 * the metadata key literally `metadata_`, and the augmented result marker.
 */
import { z } from 'zod';
import type { JobRow } from './store.ts';

/** env_vars values may be credentials: the record shows the names only. */
function redactedRuntimeEnv(row: JobRow): { env_vars: Record<string, string> } {
  return { env_vars: Object.fromEntries(Object.keys(row.envVars).map((k) => [k, '***'])) };
}

function ids(row: JobRow) {
  return { id: row.id, job_id: row.id, runtime_job_id: row.runtimeJobId, ray_job_id: row.runtimeJobId };
}

export function recordView(row: JobRow) {
  return {
    ...ids(row),
    status: row.status,
    cluster_selector: row.clusterSelector,
    source: row.source,
    source_cluster_id: row.sourceClusterId,
    source_cluster_name: row.sourceClusterName,
    user_id: row.userId,
    audit_actor: row.auditActor,
    entrypoint: row.entrypoint,
    runtime_env: redactedRuntimeEnv(row),
    python_packages: row.pythonPackages,
    delegated_access: row.delegatedAccess ?? null,
    limits: limitsView(row),
    metadata_: row.metadata,
    timeout_seconds: row.timeoutSeconds,
    timed_out: row.timedOut,
    error_type: row.errorType,
    error_message: row.errorMessage,
    submitted_at: row.submittedAt,
    started_at: row.startedAt,
    ended_at: row.endedAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

/** The caps of a local job (null before it starts and for Ray), in the record's snake_case. */
function limitsView({ limits }: JobRow) {
  if (!limits) return null;
  return {
    cgroup: limits.cgroup,
    memory_bytes: limits.memoryBytes,
    processes: limits.processes,
    tmp_bytes: limits.tmpBytes,
    network: limits.network,
  };
}

export function submitView(row: JobRow) {
  return { ...ids(row), status: row.status, cluster_selector: row.clusterSelector, submitted_at: row.submittedAt };
}

const idsAnswer = {
  id: z.string(),
  job_id: z.string(),
  runtime_job_id: z.string().nullable(),
  ray_job_id: z.string().nullable(),
};

/** A job's outcome: how it ended, and `result`, what it reported (any JSON the job printed as its marker). */
export const runAnswer = z.object({
  ...idsAnswer,
  status: z.string(),
  cluster_selector: z.string(),
  result: z.unknown(),
  error: z.string().nullable(),
  error_type: z.string().nullable(),
  error_message: z.string().nullable(),
  duration_seconds: z.number().nullable(),
  timed_out: z.boolean(),
  audit_actor: z.string(),
});

/** GET /result: the outcome, with the keys of the job's own marker object beside its facts (see resultView). */
export const resultAnswer = z.looseObject(runAnswer.shape);

/** GET /logs: the job's output so far, up to the configured size. */
export const logsAnswer = z.object({ job_id: z.string(), logs: z.string() });

export function runView(row: JobRow, result: unknown): z.output<typeof runAnswer> {
  const from = row.startedAt ?? row.submittedAt;
  const duration = row.endedAt ? Math.max(0, Date.parse(row.endedAt) - Date.parse(from)) / 1000 : null;
  return {
    ...ids(row),
    status: row.status,
    cluster_selector: row.clusterSelector,
    result: result ?? null,
    // The platform SDK's JobResult reads `error` as the short reason a job did not succeed.
    error: row.status === 'SUCCEEDED' ? null : (row.errorType ?? row.status),
    error_type: row.errorType,
    error_message: row.errorMessage,
    duration_seconds: duration,
    timed_out: row.timedOut,
    audit_actor: row.auditActor,
  };
}

/**
 * GET /result of a SUCCEEDED job: the marker object with `job_id` and `status` added when it lacks them, the
 * other facts of the job (which a marker cannot overwrite: the SDK's JobResult types them), and the whole marker
 * again as `result`, as that model reads it. `audit_actor` is who this gateway recorded, never what the job printed.
 */
export function resultView(row: JobRow, marker: unknown): Record<string, unknown> {
  const own =
    marker !== null && typeof marker === 'object' && !Array.isArray(marker) ? (marker as Record<string, unknown>) : {};
  const { job_id, status, ...facts } = runView(row, marker);
  return { job_id, status, ...own, ...facts };
}
