/** What the local runtime keeps of one job, and how its end maps to a status. */
import type { JobStatus } from '../../schema.ts';
import type { JobLimits, RuntimeJobSpec, RuntimeSnapshot } from '../types.ts';
import type { ExitRecord } from './process.ts';

export interface Entry {
  readonly jobId: string;
  spec: RuntimeJobSpec | null;
  status: JobStatus;
  startedAt: Date | null;
  endedAt: Date | null;
  errorType: string | null;
  errorMessage: string | null;
  pid: number | null;
  /** Re-attached after a restart: not our child, so the ticker polls for its end. */
  adopted: boolean;
  stopRequested: boolean;
  killTimer: NodeJS.Timeout | null;
  /** Counts against maxConcurrent: set from start (or re-attachment) until the job ends. */
  holdsSlot: boolean;
  /** The caps the job runs under, known from its start (not for one re-attached after a restart). */
  limits: JobLimits | null;
}

export function newEntry(jobId: string, spec: RuntimeJobSpec | null): Entry {
  const base = { startedAt: null, endedAt: null, errorType: null, errorMessage: null, pid: null };
  return {
    jobId,
    spec,
    status: 'PENDING',
    ...base,
    adopted: false,
    stopRequested: false,
    killTimer: null,
    holdsSlot: false,
    limits: null,
  };
}

export function finishedEntry(jobId: string, exit: ExitRecord): Entry {
  return { ...newEntry(jobId, null), ...outcome(exit, null), endedAt: exit.at };
}

export function lost(message: string): Pick<Entry, 'status' | 'errorType' | 'errorMessage'> {
  return { status: 'FAILED', errorType: 'runtime_lost', errorMessage: message };
}

/** Maps how the job ended to a status; a job stopped on request is STOPPED whatever its exit. */
export function outcome(
  exit: ExitRecord,
  entry: Entry | null,
  signal?: NodeJS.Signals | null,
): Pick<Entry, 'status'> & Partial<Entry> {
  if (entry?.errorType === 'log_limit_exceeded') {
    return {
      status: 'FAILED',
      errorType: 'log_limit_exceeded',
      errorMessage: 'the job wrote more output than the log size cap and was stopped',
    };
  }
  if (entry?.stopRequested) return { status: 'STOPPED' };
  if (exit.step === 'install') {
    return {
      status: 'FAILED',
      errorType: 'python_package_install_failed',
      errorMessage: 'installing the approved python packages failed (see the job logs)',
    };
  }
  if (signal)
    return {
      status: 'FAILED',
      errorType: 'entrypoint_failed',
      errorMessage: `the job process was killed by ${signal}`,
    };
  if (exit.code === 0) return { status: 'SUCCEEDED' };
  return {
    status: 'FAILED',
    errorType: 'entrypoint_failed',
    errorMessage: `the entrypoint failed with exit code ${exit.code}`,
  };
}

export function snapshot(entry: Entry): RuntimeSnapshot {
  return {
    status: entry.status,
    startedAt: entry.startedAt,
    endedAt: entry.endedAt,
    errorType: entry.errorType,
    errorMessage: entry.errorMessage,
    limits: entry.limits,
  };
}

export function isTerminal(status: JobStatus): boolean {
  return status !== 'PENDING' && status !== 'RUNNING';
}
