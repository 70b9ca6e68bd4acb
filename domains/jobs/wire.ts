/**
 * Job records on the wire: superset bodies carrying both
 * `id`/`job_id` and `runtime_job_id`/`ray_job_id` (both names, so old and new clients each find theirs),
 * the metadata key literally `metadata_`, and the augmented result marker.
 */
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

export function submitView(row: JobRow) {
  return { ...ids(row), status: row.status, cluster_selector: row.clusterSelector, submitted_at: row.submittedAt };
}

export function runView(row: JobRow, result: unknown) {
  const from = row.startedAt ?? row.submittedAt;
  const duration = row.endedAt ? Math.max(0, Date.parse(row.endedAt) - Date.parse(from)) / 1000 : null;
  return {
    ...ids(row),
    status: row.status,
    cluster_selector: row.clusterSelector,
    result: result ?? null,
    error_type: row.errorType,
    error_message: row.errorMessage,
    duration_seconds: duration,
    timed_out: row.timedOut,
    audit_actor: row.auditActor,
  };
}

/**
 * Both client generations parse it: the marker object plus job_id and status
 * when it lacks them; anything else wrapped.
 */
export function resultView(row: JobRow, marker: unknown): Record<string, unknown> {
  if (marker !== null && typeof marker === 'object' && !Array.isArray(marker)) {
    return { job_id: row.id, status: row.status, ...(marker as Record<string, unknown>) };
  }
  return { job_id: row.id, status: row.status, result: marker };
}
