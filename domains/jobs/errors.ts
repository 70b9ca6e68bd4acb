/** Reasons of the jobs domain and its execution gate. */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const JobsErrors = defineErrors('jobs', {
  job_not_found: {
    status: 404,
    doc:
      'No job with that id is visible to the caller (unknown, another ' +
      'user’s, or another source cluster’s for mesh callers).',
  },
  job_not_succeeded: {
    status: 409,
    doc: 'The job result was requested while the job is still PENDING or RUNNING; `status` says where it is.',
  },
  job_logs_expired: {
    status: 410,
    doc:
      'The job’s logs passed their retention time (or the runtime no longer ' +
      'has them), so neither logs nor result can be read.',
  },
  job_result_missing: {
    status: 410,
    doc: 'The job succeeded but printed no `KZ_MESH_RUN_ON_JSON::` line with a JSON document.',
  },
  python_package_not_approved: {
    status: 400,
    doc: 'A `python_packages` coordinate (`package`) is not in the operator’s approved catalog; nothing was run.',
  },
  job_runtime_unavailable: {
    status: 503,
    doc:
      'The job runtime (the local process runner or the Ray cluster) refused ' +
      'or failed the submission; no job was recorded.',
  },
  job_sandbox_unavailable: {
    status: 503,
    doc:
      'Local jobs are refused: the job sandbox (bubblewrap) could not be ' +
      'made on this machine at start, or no job cgroup could be made and ' +
      '`jobs.local.limits.requireCgroup` is set; the gateway log says why.',
  },
  no_execution_gate_configured_for_mesh: {
    status: 403,
    doc:
      'A mesh-originated job was refused because no execution gate is bound ' +
      'on this cluster; `gate` is `(unconfigured)`.',
  },
  gate_load_error: {
    status: 403,
    doc: 'The bound execution gate’s class path is no longer available; submissions fail closed until it is rebound.',
  },
});
