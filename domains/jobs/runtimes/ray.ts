/**
 * The scale-out job runtime: a Ray cluster
 * driven through the Ray Jobs REST API on its dashboard (`/api/jobs/`),
 * over undici. Ray keeps the state and the logs; this adapter maps them.
 * Approved packages go to Ray's pip runtime_env with the same hash pinning
 * and offline index as the local runtime.
 */
import { Agent, request } from 'undici';
import type { JobStatus } from '../schema.ts';
import {
  bufferLogSource,
  type JobRuntime,
  type LogSource,
  type RecoverableJob,
  type RuntimeJobSpec,
  type RuntimeSnapshot,
} from './types.ts';

export interface RayRuntimeOptions {
  dashboardUrl: string;
  requestTimeoutMs: number;
  wheelDir: string | null;
}

interface RayJobDetails {
  status: JobStatus;
  message?: string | null;
  error_type?: string | null;
  start_time?: number | null;
  end_time?: number | null;
  driver_exit_code?: number | null;
}

export class RayApiError extends Error {
  constructor(
    readonly status: number,
    readonly path: string,
  ) {
    super(`Ray Jobs API ${path} answered ${status}`);
    this.name = 'RayApiError';
  }
}

export class RayJobRuntime implements JobRuntime {
  readonly kind = 'ray';
  readonly #agent: Agent;
  readonly #base: string;

  constructor(private readonly options: RayRuntimeOptions) {
    this.#base = options.dashboardUrl.replace(/\/$/, '');
    this.#agent = new Agent({
      headersTimeout: options.requestTimeoutMs,
      bodyTimeout: options.requestTimeoutMs,
      connect: { timeout: options.requestTimeoutMs },
    });
  }

  /** Ray takes our submission id, so the runtime id is known before the call. */
  idFor(jobId: string): string {
    return `meshgate_${jobId.replaceAll('-', '')}`;
  }

  async submit(spec: RuntimeJobSpec): Promise<void> {
    const runtimeEnv: Record<string, unknown> = { env_vars: spec.env };
    if (spec.packages.length > 0) {
      if (!this.options.wheelDir) throw new Error('no wheel directory is configured for python_packages');
      runtimeEnv.pip = {
        packages: spec.packages.map(
          (p) => `${p.name}==${p.version} ${p.sha256.map((h) => `--hash=sha256:${h}`).join(' ')}`,
        ),
        pip_check: false,
        pip_install_options: [
          '--disable-pip-version-check',
          '--no-input',
          '--require-hashes',
          '--no-deps',
          '--no-index',
          '--find-links',
          this.options.wheelDir,
        ],
      };
    }
    await this.#call('POST', '/api/jobs/', {
      submission_id: this.idFor(spec.jobId),
      entrypoint: spec.entrypoint,
      runtime_env: runtimeEnv,
      metadata: { ...spec.metadata, meshgate_job_id: spec.jobId },
    });
  }

  async status(runtimeJobId: string): Promise<RuntimeSnapshot> {
    const details = await this.#call<RayJobDetails>(
      'GET',
      `/api/jobs/${encodeURIComponent(runtimeJobId)}`,
      undefined,
      true,
    );
    if (details === null)
      return { status: 'FAILED', errorType: 'runtime_lost', errorMessage: 'the Ray cluster has no record of this job' };
    const failed = details.status === 'FAILED';
    return {
      status: details.status,
      startedAt: details.start_time ? new Date(details.start_time) : null,
      endedAt: details.end_time ? new Date(details.end_time) : null,
      errorType: failed ? errorType(details) : null,
      // Ray appends the log tail to its message; the record keeps the first line only.
      errorMessage: failed
        ? (details.message ?? '').split('\n')[0]?.replace(/, last available logs.*$/, '') || null
        : null,
    };
  }

  async openLogs(runtimeJobId: string): Promise<LogSource | null> {
    const body = await this.#call<{ logs: string }>(
      'GET',
      `/api/jobs/${encodeURIComponent(runtimeJobId)}/logs`,
      undefined,
      true,
    );
    return body === null ? null : bufferLogSource(body.logs ?? '');
  }

  async stop(runtimeJobId: string): Promise<void> {
    await this.#call('POST', `/api/jobs/${encodeURIComponent(runtimeJobId)}/stop`, undefined, true);
  }

  async purge(runtimeJobId: string): Promise<void> {
    await this.#call('DELETE', `/api/jobs/${encodeURIComponent(runtimeJobId)}`, undefined, true);
  }

  /** Ray holds the jobs' state across gateway restarts; status() asks it directly. */
  async recover(_jobs: readonly RecoverableJob[]): Promise<void> {}

  /** Ray does not push changes; the service polls (jobs.runPollIntervalMs). */
  onChange(_listener: (runtimeJobId: string) => void): () => void {
    return () => {};
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  /** JSON call; with `missingIsNull`, a 404 resolves to null instead of throwing. */
  async #call<T>(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    json?: unknown,
    missingIsNull = false,
  ): Promise<T | null> {
    const res = await request(`${this.#base}${path}`, {
      method,
      dispatcher: this.#agent,
      headers: json === undefined ? {} : { 'content-type': 'application/json' },
      body: json === undefined ? null : JSON.stringify(json),
    });
    const text = await res.body.text();
    if (res.statusCode === 404 && missingIsNull) return null;
    if (res.statusCode < 200 || res.statusCode >= 300) throw new RayApiError(res.statusCode, path);
    return (text ? JSON.parse(text) : null) as T | null;
  }
}

function errorType(details: RayJobDetails): string {
  if (typeof details.driver_exit_code === 'number' && details.driver_exit_code !== 0) return 'entrypoint_failed';
  if (details.error_type === 'RUNTIME_ENV_SETUP_FAILURE') return 'python_package_install_failed';
  return details.error_type ? details.error_type.toLowerCase() : 'ray_job_failed';
}
