/**
 * The seam between the jobs service and whatever runs the processes:
 * the embedded local runner or a Ray cluster. The service
 * owns the records; a runtime only runs, reports and forgets. One contract
 * suite (test/contract/job-runtime.contract.ts) runs against every runtime.
 */
import type { ApprovedPackage, JobLimits, JobStatus } from '../schema.ts';

export type { JobLimits } from '../schema.ts';

export interface RuntimeJobSpec {
  readonly jobId: string;
  readonly entrypoint: string;
  /** The job's whole environment additions: the caller's env_vars, then the platform's (which win). */
  readonly env: Readonly<Record<string, string>>;
  /** Approved, hash-pinned packages to install before the entrypoint runs. */
  readonly packages: readonly ApprovedPackage[];
  readonly metadata: Readonly<Record<string, string>>;
}

/** What the runtime knows of one job right now. */
export interface RuntimeSnapshot {
  readonly status: JobStatus;
  readonly startedAt?: Date | null;
  readonly endedAt?: Date | null;
  /** Stable snake_case cause for FAILED (entrypoint_failed, runtime_lost, ...). */
  readonly errorType?: string | null;
  readonly errorMessage?: string | null;
  /** Known once the job started, for runtimes that set caps themselves (local). */
  readonly limits?: JobLimits | null;
}

/** Random access to a job's combined stdout+stderr, so the marker scan can read from the end. */
export interface LogSource {
  readonly size: number;
  read(position: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** An active job the service hands back to the runtime after a gateway restart. */
export interface RecoverableJob {
  readonly runtimeJobId: string;
  readonly status: JobStatus;
  readonly spec: RuntimeJobSpec;
}

export interface JobRuntime {
  /** Stored on each record (`local`, `ray`). */
  readonly kind: string;
  /** The runtime's id for a job, derived from the job id (known before submission). */
  idFor(jobId: string): string;
  /** Accepts the job (queued or started); never waits for it to run. */
  submit(spec: RuntimeJobSpec): Promise<void>;
  status(runtimeJobId: string): Promise<RuntimeSnapshot>;
  /** null when the runtime no longer has the logs. */
  openLogs(runtimeJobId: string): Promise<LogSource | null>;
  /** Signals cancellation; resolves once signalled, not once the job is gone. */
  stop(runtimeJobId: string): Promise<void>;
  /** Forgets a terminal job's logs and leftovers (retention expiry). */
  purge(runtimeJobId: string): Promise<void>;
  /** After a restart: re-attach running jobs, re-queue pending ones; returns nothing, status() tells. */
  recover(jobs: readonly RecoverableJob[]): Promise<void>;
  /** Called with a runtime job id whenever that job changes state; returns an unsubscribe. */
  onChange(listener: (runtimeJobId: string) => void): () => void;
  close(): Promise<void>;
}

export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(['SUCCEEDED', 'FAILED', 'STOPPED']);

/** In-memory log source over a whole log text (runtimes whose API returns the log as one string). */
export function bufferLogSource(text: string): LogSource {
  const buffer = Buffer.from(text, 'utf8');
  return {
    size: buffer.length,
    read: async (position, length) => buffer.subarray(position, position + length),
    close: async () => {},
  };
}
