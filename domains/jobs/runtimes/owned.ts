/**
 * Local jobs have one owner: the process that started them holds their
 * process groups, exit watchers, queue and kill timers. With several
 * workers that is the primary; a worker's jobs service talks to it through
 * the owner link (gateway/process/link.ts) with this runtime, so a job
 * submitted on one worker can be cancelled, polled or read on any other.
 * Logs are read straight from the job's file (the same data dir), not
 * shipped over the link.
 */
import { type OwnerSide, ownerCall, ownerNotice, type WorkerSide } from '../../../gateway/process/link.ts';
import { localRuntimeJobId, openJobLog } from './local/job-files.ts';
import type { JobRuntime, LogSource, RuntimeJobSpec, RuntimeSnapshot } from './types.ts';

const SUBMIT = ownerCall<RuntimeJobSpec, void>('jobs.submit');
const STATUS = ownerCall<string, RuntimeSnapshot>('jobs.status');
const STOP = ownerCall<string, void>('jobs.stop');
const PURGE = ownerCall<string, void>('jobs.purge');
/** A job changed state in the owner (its runtime job id): workers waiting on it (`run`) look again. */
const CHANGED = ownerNotice<string>('jobs.changed');

/** In the primary: serve the workers' calls with the real runtime and pass on its changes. */
export function answerJobCalls(link: OwnerSide, runtime: JobRuntime): void {
  link.answer(SUBMIT, (spec) => runtime.submit(spec));
  link.answer(STATUS, (id) => runtime.status(id));
  link.answer(STOP, (id) => runtime.stop(id));
  link.answer(PURGE, (id) => runtime.purge(id));
  runtime.onChange((id) => void link.notify(CHANGED, id));
}

/** In a worker: the local runtime as seen from outside its owner. */
export class OwnedJobRuntime implements JobRuntime {
  readonly kind = 'local';
  readonly #unlisten: Array<() => void> = [];

  constructor(
    private readonly link: WorkerSide,
    private readonly jobsDir: string,
  ) {}

  idFor(jobId: string): string {
    return localRuntimeJobId(jobId);
  }

  submit(spec: RuntimeJobSpec): Promise<void> {
    return this.link.ask(SUBMIT, spec);
  }

  status(runtimeJobId: string): Promise<RuntimeSnapshot> {
    return this.link.ask(STATUS, runtimeJobId);
  }

  openLogs(runtimeJobId: string): Promise<LogSource | null> {
    return openJobLog(this.jobsDir, runtimeJobId);
  }

  stop(runtimeJobId: string): Promise<void> {
    return this.link.ask(STOP, runtimeJobId);
  }

  purge(runtimeJobId: string): Promise<void> {
    return this.link.ask(PURGE, runtimeJobId);
  }

  /** The owner re-attaches its jobs itself when it starts. */
  async recover(): Promise<void> {}

  onChange(listener: (runtimeJobId: string) => void): () => void {
    const unlisten = this.link.listen(CHANGED, listener);
    this.#unlisten.push(unlisten);
    return unlisten;
  }

  async close(): Promise<void> {
    for (const unlisten of this.#unlisten.splice(0)) unlisten();
  }
}
