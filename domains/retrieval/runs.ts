/**
 * Live state of running streams: their abort controllers (cancel reaches
 * every stream of a job; disabling a user, every stream that user reads),
 * their progress (kept in memory, written to the
 * job row at most once a second and at the end, so a 10M-row stream does
 * not turn into 10k synchronous database writes), and the in-memory
 * credential overrides (`credential_override`, never persisted).
 */
import { ApiError } from '../../gateway/errors/api-error.ts';
import { RetrievalErrors } from './errors.ts';
import type { JobChanges, JobStore } from './store.ts';
import type { Progress } from './wire.ts';

const FLUSH_MS = 1000;
const OVERRIDE_TTL_MS = 6 * 3600 * 1000;

interface Live {
  /** Each open stream's controller, with the user reading it. */
  controllers: Map<AbortController, string>;
  progress: Progress;
  flushedAt: number;
  /** The first failure among the job's streams: reads of one job at once (Flight endpoints) end as one outcome. */
  failure: string | null;
}

export class ActiveRuns {
  readonly #live = new Map<string, Live>();
  readonly #overrides = new Map<string, { value: string; until: number }>();

  constructor(
    private readonly store: JobStore,
    private readonly now: () => Date,
  ) {}

  /**
   * Registers a stream of the job read by `readerId`; aborted by cancel(), stopReaders() or end(). The first
   * of streams read at once starts the job's progress from zero; the others add to it.
   */
  begin(jobId: string, readerId: string): AbortController {
    const controller = new AbortController();
    let live = this.#live.get(jobId);
    if (!live) {
      live = { controllers: new Map(), progress: { rows: 0, bytes: 0, chunks: 0 }, flushedAt: 0, failure: null };
      this.#live.set(jobId, live);
      this.#write(jobId, { status: 'RUNNING', rows: 0, bytes: 0, chunks: 0, error: null });
    }
    live.controllers.set(controller, readerId);
    return controller;
  }

  advance(jobId: string, rows: number, bytes: number): void {
    const live = this.#live.get(jobId);
    if (!live) return;
    live.progress.rows += rows;
    live.progress.bytes += bytes;
    live.progress.chunks += 1;
    const at = this.now().getTime();
    if (at - live.flushedAt >= FLUSH_MS) {
      live.flushedAt = at;
      this.#write(jobId, { ...live.progress });
    }
  }

  /**
   * Ends one stream: its progress, and once the job's last open stream ends, its status (unless the job was
   * canceled meanwhile): FAILED with the first failure of any of them, else COMPLETED.
   */
  end(
    jobId: string,
    controller: AbortController,
    outcome: { status: 'COMPLETED' | 'FAILED'; error: string | null },
    canceled: boolean,
  ): void {
    const live = this.#live.get(jobId);
    controller.abort();
    if (!live) return;
    live.controllers.delete(controller);
    if (outcome.status === 'FAILED') live.failure ??= outcome.error;
    const changes: JobChanges = { ...live.progress };
    const last = live.controllers.size === 0;
    if (last && !canceled)
      Object.assign(changes, live.failure === null ? outcome : { status: 'FAILED', error: live.failure });
    this.#write(jobId, changes);
    if (last) this.#live.delete(jobId);
  }

  cancel(jobId: string): void {
    for (const controller of this.#live.get(jobId)?.controllers.keys() ?? []) controller.abort();
    this.#overrides.delete(jobId);
  }

  /** Ends every stream whose reader `gone` says may read no more (disabled or deleted), with `reason`. */
  stopReaders(gone: (readerId: string) => boolean, reason: ApiError): void {
    for (const live of this.#live.values())
      for (const [controller, readerId] of live.controllers) if (gone(readerId)) controller.abort(reason);
  }

  progress(jobId: string): Progress | undefined {
    const live = this.#live.get(jobId);
    return live ? { ...live.progress } : undefined;
  }

  rememberOverride(jobId: string, value: string | null): void {
    if (value !== null) this.#overrides.set(jobId, { value, until: this.now().getTime() + OVERRIDE_TTL_MS });
  }

  override(jobId: string): string | null {
    const at = this.now().getTime();
    for (const [id, entry] of this.#overrides) if (entry.until <= at) this.#overrides.delete(id);
    return this.#overrides.get(jobId)?.value ?? null;
  }

  abortAll(): void {
    for (const live of this.#live.values()) for (const controller of live.controllers.keys()) controller.abort();
  }

  #write(jobId: string, changes: JobChanges): void {
    this.store.update(jobId, { ...changes, updatedAt: this.now().toISOString() });
  }
}

/** Why a stream's read was aborted: the ApiError it was stopped with (stopReaders), else a cancel of its job. */
export function abortReason(signal: AbortSignal, jobId: string): ApiError {
  return signal.reason instanceof ApiError
    ? signal.reason
    : RetrievalErrors.make.retrieval_job_canceled({ job_id: jobId });
}
