/**
 * Keeps job records in step with the runtime: applies its snapshots (a
 * terminal record never changes again), re-attaches active jobs after a
 * restart so none stays RUNNING forever, and expires logs after the
 * retention time (then /logs and /result answer 410 Gone).
 */
import type { Logger } from 'pino';
import { specFor } from './env.ts';
import type { JobRuntime, RuntimeSnapshot } from './runtimes/types.ts';
import { TERMINAL_STATUSES } from './runtimes/types.ts';
import type { JobPatch, JobRow, JobStore } from './store.ts';

export interface TrackerOptions {
  logRetentionSeconds: number;
  apiUrl: () => string;
  /** This process owns the jobs: it re-attaches them at start and sweeps expired logs (else it only tracks). */
  owner: boolean;
  /**
   * The job runs in this node's runtime: false for a local job of another node of the cluster, whose record that
   * node keeps current and whose processes and logs this node cannot reach (JobOwnership).
   */
  mine: (row: JobRow) => boolean;
}

export class JobTracker {
  readonly #waiters = new Map<string, Set<() => void>>();
  #unsubscribe: (() => void) | null = null;
  #sweeper: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: JobStore,
    private readonly runtime: JobRuntime,
    private readonly options: TrackerOptions,
    private readonly now: () => Date,
    private readonly logger: Logger,
  ) {}

  /** Re-attaches what was active before the restart, then keeps records current. */
  async start(): Promise<void> {
    this.#unsubscribe = this.runtime.onChange((runtimeJobId) => this.#changed(runtimeJobId));
    if (!this.options.owner) return;
    for (const row of this.store.activeOtherThan(this.runtime.kind).filter(this.options.mine)) {
      this.patchActive(
        row.id,
        lostPatch(`the job's runtime (${row.runtime}) is no longer the configured one`, this.now()),
      );
    }
    const active = this.store.active(this.runtime.kind).filter(this.options.mine);
    await this.runtime.recover(
      active.map((row) => ({
        runtimeJobId: row.runtimeJobId,
        status: row.status,
        spec: specFor(row, this.options.apiUrl()),
      })),
    );
    for (const row of active) await this.refresh(row);
    const every = Math.min(this.options.logRetentionSeconds * 500, 600_000);
    this.#sweeper = setInterval(
      () => void this.sweep().catch((error) => this.logger.error({ err: error }, 'job log sweep failed')),
      every,
    );
    this.#sweeper.unref();
  }

  /** The record as of now: asks the runtime about an active job and stores what changed. */
  async refresh(row: JobRow): Promise<JobRow> {
    if (TERMINAL_STATUSES.has(row.status) || !this.options.mine(row)) return row;
    let snap: RuntimeSnapshot;
    try {
      snap = await this.runtime.status(row.runtimeJobId);
    } catch (error) {
      // An unreachable runtime (Ray down) leaves the last known record; the next read tries again.
      this.logger.warn({ err: error, job_id: row.id, runtime: this.runtime.kind }, 'job runtime status unavailable');
      return row;
    }
    const patch = transition(row, snap, this.now());
    return patch ? (this.patchActive(row.id, patch) ?? this.store.get(row.id) ?? row) : row;
  }

  patchActive(id: string, patch: JobPatch): JobRow | undefined {
    const updated = this.store.updateActive(id, { ...patch, updatedAt: this.now().toISOString() });
    if (updated && TERMINAL_STATUSES.has(updated.status)) {
      this.logger.info({ job_id: id, status: updated.status, error_type: updated.errorType }, 'job ended');
    }
    return updated;
  }

  /** Resolves when the runtime reports a change for the job, or after `ms`. */
  waitForChange(runtimeJobId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const waiters = this.#waiters.get(runtimeJobId) ?? new Set();
      this.#waiters.set(runtimeJobId, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.#waiters.delete(runtimeJobId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }

  logsExpired(row: JobRow): boolean {
    if (row.logsPurgedAt !== null) return true;
    return (
      row.endedAt !== null && Date.parse(row.endedAt) + this.options.logRetentionSeconds * 1000 <= this.now().getTime()
    );
  }

  /** Purges logs past retention; also run on demand when a read finds an expired job. */
  async sweep(): Promise<void> {
    const cutoff = new Date(this.now().getTime() - this.options.logRetentionSeconds * 1000).toISOString();
    for (const row of this.store.expiredLogs(cutoff).filter(this.options.mine)) await this.purge(row);
  }

  async purge(row: JobRow): Promise<void> {
    await this.runtime.purge(row.runtimeJobId);
    this.store.update(row.id, { logsPurgedAt: this.now().toISOString() });
  }

  close(): void {
    this.#unsubscribe?.();
    if (this.#sweeper) clearInterval(this.#sweeper);
    for (const waiters of this.#waiters.values()) for (const done of [...waiters]) done();
  }

  #changed(runtimeJobId: string): void {
    const row = this.store.getByRuntimeId(runtimeJobId);
    const settle = () => {
      for (const done of [...(this.#waiters.get(runtimeJobId) ?? [])]) done();
    };
    if (!row) {
      settle();
      return;
    }
    this.refresh(row)
      .catch((error) => this.logger.error({ err: error, job_id: row.id }, 'job refresh failed'))
      .finally(settle);
  }
}

/** The record change a runtime snapshot implies, or null; status never moves backwards. */
export function transition(row: JobRow, snap: RuntimeSnapshot, now: Date): JobPatch | null {
  const at = (d: Date | null | undefined) => (d ?? now).toISOString();
  // The caps are set once, at the job's start; a snapshot that no longer knows them keeps the recorded ones.
  const limits = snap.limits && row.limits === null ? { limits: snap.limits } : {};
  if (TERMINAL_STATUSES.has(snap.status)) {
    const ok = snap.status === 'SUCCEEDED';
    return {
      ...limits,
      status: snap.status,
      startedAt: row.startedAt ?? (snap.startedAt ? snap.startedAt.toISOString() : null),
      endedAt: at(snap.endedAt),
      errorType: ok ? null : (snap.errorType ?? null),
      errorMessage: ok ? null : (snap.errorMessage ?? null),
    };
  }
  if (snap.status === 'RUNNING' && row.status === 'PENDING')
    return { ...limits, status: 'RUNNING', startedAt: at(snap.startedAt) };
  return null;
}

export function lostPatch(message: string, now: Date): JobPatch {
  return { status: 'FAILED', errorType: 'runtime_lost', errorMessage: message, endedAt: now.toISOString() };
}
