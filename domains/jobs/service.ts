/**
 * The jobs service: submit, run, status, result,
 * logs, cancel and list over one JobRuntime. Transport-free; every call
 * takes the caller's Principal. A job is visible to its submitter (and to
 * native admins); a mesh caller sees only jobs from its own source cluster.
 * Jobs run on this cluster: a request naming another cluster never reaches
 * here (routes.ts hands it to the forwarding shim in forward.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ApiError } from '../../gateway/errors/api-error.ts';
import { isNativeAdmin, type Principal } from '../../gateway/principal.ts';
import { createServiceKey } from '../../gateway/services.ts';
import type { AuthzService } from '../authz/index.ts';
import { specFor } from './env.ts';
import { JobsErrors } from './errors.ts';
import type { ExecutionGateService } from './gate.ts';
import { findMarker, readLogText } from './marker.ts';
import type { JobOwnership } from './ownership.ts';
import type { PackageCatalog } from './packages.ts';
import type { JobRequestInput } from './request.ts';
import { type JobRuntime, TERMINAL_STATUSES } from './runtimes/types.ts';
import type { JobRow, JobStore } from './store.ts';
import type { JobTracker } from './tracker.ts';
import { recordView, resultView, runView, submitView } from './wire.ts';

export const JOBS_OBJECT = { namespace: 'cluster_jobs', id: '__all__' } as const;

export interface JobsServiceOptions {
  /** 600 s when a run names no timeout_seconds: the public client's own default wait. */
  defaultRunTimeoutSeconds: number;
  logsResponseMaxBytes: number;
  /** Upper bound between status polls while `run` waits (runtimes that push changes end the wait sooner). */
  runPollIntervalMs: number;
  apiUrl: () => string;
}

export interface JobsDeps {
  store: JobStore;
  runtime: JobRuntime;
  tracker: JobTracker;
  gate: ExecutionGateService;
  catalog: PackageCatalog;
  authz: AuthzService;
  ownership: JobOwnership;
  options: JobsServiceOptions;
  now: () => Date;
  logger: Logger;
}

export class JobsService {
  constructor(private readonly deps: JobsDeps) {}

  async submit(principal: Principal, input: JobRequestInput) {
    return submitView(await this.#create(principal, input));
  }

  /** Submit, wait until terminal or timeout_seconds (then cancel: STOPPED, timed_out), extract the marker. */
  async run(principal: Principal, input: JobRequestInput) {
    const timeout = input.timeout_seconds ?? this.deps.options.defaultRunTimeoutSeconds;
    let row = await this.#create(principal, { ...input, timeout_seconds: timeout });
    const deadline = Date.parse(row.submittedAt) + timeout * 1000;
    for (;;) {
      row = await this.deps.tracker.refresh(row);
      if (TERMINAL_STATUSES.has(row.status)) break;
      const left = deadline - this.deps.now().getTime();
      if (left <= 0) {
        row = await this.#stop(row, timeout);
        break;
      }
      await this.deps.tracker.waitForChange(row.runtimeJobId, Math.min(left, this.deps.options.runPollIntervalMs));
    }
    const marker = await this.#scanMarker(row);
    return runView(row, marker !== 'expired' && marker.found ? marker.value : null);
  }

  async status(principal: Principal, jobId: string) {
    return recordView(await this.deps.tracker.refresh(this.#visible(principal, jobId)));
  }

  /** 200 marker; 409 until SUCCEEDED; 410 when logs expired or no marker (what polling clients branch on). */
  async result(principal: Principal, jobId: string) {
    const row = await this.deps.tracker.refresh(this.#visible(principal, jobId));
    // A job that ended otherwise has an outcome to report (the SDK drops a 409 body): its record, error included.
    if (row.status !== 'SUCCEEDED' && TERMINAL_STATUSES.has(row.status)) return runView(row, null);
    if (row.status !== 'SUCCEEDED') throw JobsErrors.make.job_not_succeeded({ status: row.status });
    const marker = await this.#scanMarker(row);
    if (marker === 'expired') throw JobsErrors.make.job_logs_expired();
    if (!marker.found) throw JobsErrors.make.job_result_missing();
    return resultView(row, marker.value);
  }

  async logs(principal: Principal, jobId: string) {
    const row = await this.deps.tracker.refresh(this.#visible(principal, jobId));
    const source = await this.#openLogs(row);
    if (source === 'expired') throw JobsErrors.make.job_logs_expired();
    if (source === null) return { job_id: row.id, logs: '' };
    try {
      return { job_id: row.id, logs: await readLogText(source, this.deps.options.logsResponseMaxBytes) };
    } finally {
      await source.close();
    }
  }

  /** The updated record; a terminal job is returned unchanged. */
  async cancel(principal: Principal, jobId: string) {
    const row = await this.deps.tracker.refresh(this.#visible(principal, jobId));
    return recordView(TERMINAL_STATUSES.has(row.status) ? row : await this.#stop(row, null));
  }

  async list(principal: Principal, page: { limit: number; offset: number }) {
    const all = isNativeAdmin(principal);
    const rows = this.deps.store.list({
      userId: all ? undefined : principal.userId,
      sourceClusterId: principal.source === 'mesh' ? (principal.sourceClusterId ?? '') : undefined,
      ...page,
    });
    return Promise.all(rows.map(async (row) => recordView(await this.deps.tracker.refresh(row))));
  }

  /** Allowlist revoke with cancel_in_flight_jobs=true: best effort; returns how many were stopped. */
  async cancelActiveJobsOf(userId: string): Promise<number> {
    let stopped = 0;
    for (const row of this.deps.store.activeOf(userId)) {
      if ((await this.#stop(row, null)).status === 'STOPPED') stopped++;
    }
    return stopped;
  }

  async #create(principal: Principal, input: JobRequestInput): Promise<JobRow> {
    this.deps.authz.require(principal, 'executor', JOBS_OBJECT);
    const decision = this.deps.gate.enforce({
      source: principal.source,
      userId: principal.userId,
      entrypoint: input.entrypoint,
      attributes: principal.attributes,
    });
    const packages = this.deps.catalog.resolve(input.python_packages ?? []);
    const row = this.#newRow(principal, input, packages);
    this.deps.store.insert(row);
    try {
      await this.deps.runtime.submit(specFor(row, this.deps.options.apiUrl()));
    } catch (error) {
      this.deps.store.delete(row.id);
      if (error instanceof ApiError) throw error; // the runtime's own refusal, already a stable reason
      this.deps.logger.error({ err: error, runtime: this.deps.runtime.kind }, 'job runtime refused a submission');
      throw JobsErrors.make.job_runtime_unavailable({ runtime: this.deps.runtime.kind }, error);
    }
    this.deps.logger.info(
      { job_id: row.id, user_id: row.userId, source: row.source, gate: decision.gate, decision: decision.reason },
      'job submitted',
    );
    return row;
  }

  #newRow(principal: Principal, input: JobRequestInput, packages: JobRow['pythonPackages']): JobRow {
    const id = randomUUID();
    const at = this.deps.now().toISOString();
    return {
      id,
      runtime: this.deps.runtime.kind,
      runtimeJobId: this.deps.runtime.idFor(id),
      ownerNode: this.deps.ownership.ownerFor(this.deps.runtime),
      status: 'PENDING',
      source: principal.source,
      sourceClusterId: principal.source === 'mesh' ? (principal.sourceClusterId ?? null) : null,
      sourceClusterName: principal.source === 'mesh' ? (principal.sourceClusterName ?? null) : null,
      userId: principal.userId,
      tenantId: principal.tenantId,
      auditActor: principal.externalId ?? principal.userId,
      clusterSelector: 'local',
      entrypoint: input.entrypoint,
      envVars: input.runtime_env?.env_vars ?? {},
      userAttrs: {
        ...principal.attributes,
        sub: principal.userId,
        user_id: principal.userId,
        email: principal.email,
        preferred_username: principal.username,
      },
      metadata: input.metadata ?? {},
      delegatedAccess: input.delegated_access ?? null,
      pythonPackages: packages,
      limits: null,
      timeoutSeconds: input.timeout_seconds ?? null,
      timedOut: false,
      errorType: null,
      errorMessage: null,
      submittedAt: at,
      startedAt: null,
      endedAt: null,
      logsPurgedAt: null,
      createdAt: at,
      updatedAt: at,
    };
  }

  /** One 404 so existence does not leak: unknown, someone else's, or another source cluster's job all look absent. */
  #visible(principal: Principal, jobId: string): JobRow {
    const row = this.deps.store.get(jobId);
    const mine = row && (isNativeAdmin(principal) || row.userId === principal.userId);
    const sameCluster =
      row && (principal.source !== 'mesh' || row.sourceClusterId === (principal.sourceClusterId ?? null));
    if (!row || !mine || !sameCluster) throw JobsErrors.make.job_not_found({ job_id: jobId });
    return row;
  }

  /** Records STOPPED first (the answer the caller gets), then signals the runtime. */
  async #stop(row: JobRow, timeoutSeconds: number | null): Promise<JobRow> {
    const timedOut = timeoutSeconds !== null;
    const updated = this.deps.tracker.patchActive(row.id, {
      status: 'STOPPED',
      endedAt: this.deps.now().toISOString(),
      timedOut,
      errorType: timedOut ? 'timeout' : null,
      errorMessage: timedOut ? `the job exceeded timeout_seconds=${timeoutSeconds} and was stopped` : null,
    });
    if (!updated) return this.deps.store.get(row.id) ?? row;
    if (!this.deps.ownership.mine(row)) {
      this.deps.ownership.requestStop(row);
      return updated;
    }
    await this.deps.runtime
      .stop(row.runtimeJobId)
      .catch((error) => this.deps.logger.warn({ err: error, job_id: row.id }, 'job stop signal failed'));
    return updated;
  }

  /** The live node to send a logs or result read on to, when another node runs the job. */
  ownerUrl(jobId: string): string | null {
    return this.deps.ownership.ownerUrl(jobId);
  }

  async #openLogs(row: JobRow) {
    // Reached for another node's job only when that node cannot be asked (it stopped, or the caller has no token).
    if (!this.deps.ownership.mine(row)) throw JobsErrors.make.job_runtime_unavailable({ runtime: 'another node' });
    if (this.deps.tracker.logsExpired(row)) {
      if (row.logsPurgedAt === null) await this.deps.tracker.purge(row);
      return 'expired' as const;
    }
    const source = await this.deps.runtime.openLogs(row.runtimeJobId).catch((error: unknown) => {
      throw JobsErrors.make.job_runtime_unavailable({ runtime: this.deps.runtime.kind }, error);
    });
    return source === null && TERMINAL_STATUSES.has(row.status) && row.startedAt !== null
      ? ('expired' as const)
      : source;
  }

  async #scanMarker(row: JobRow) {
    const source = await this.#openLogs(row);
    if (source === 'expired') return source;
    if (source === null) return { found: false as const };
    try {
      return await findMarker(source);
    } finally {
      await source.close();
    }
  }
}

export const JOBS = createServiceKey<JobsService>('jobs');
