/**
 * The embedded local job runtime: processes
 * on this machine, at most `maxConcurrent` at a time with a FIFO queue
 * (queued jobs stay PENDING), cancel = SIGTERM to the group then SIGKILL
 * after a grace, output capped at `maxLogBytes` (a job that writes more is
 * stopped as FAILED log_limit_exceeded). One ticker watches log sizes and
 * jobs re-attached after a restart.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { JobsErrors } from '../../errors.ts';
import type { JobLimits, JobRuntime, LogSource, RecoverableJob, RuntimeJobSpec, RuntimeSnapshot } from '../types.ts';
import type { CgroupCaps, JobCgroup, JobCgroups } from './cgroups.ts';
import { type Entry, finishedEntry, isTerminal, lost, newEntry, outcome, snapshot } from './entry.ts';
import { jobIdOf, localRuntimeJobId, openJobLog } from './job-files.ts';
import {
  type JobPaths,
  jobPaths,
  livePid,
  logSize,
  prepareJobDir,
  readExit,
  signalGroup,
  spawnJob,
  wasStarted,
} from './process.ts';
import type { JobSandbox } from './sandbox.ts';

export interface LocalRuntimeOptions {
  jobsDir: string;
  maxConcurrent: number;
  maxLogBytes: number;
  stopGraceMs: number;
  python: string;
  wheelDir: string | null;
  /** The clean base environment every job starts from (PATH, LANG; HOME is the job's work dir). */
  baseEnv: Record<string, string>;
  sandbox: JobSandbox;
  /** Why no sandbox can be made here (probed from start on), or null; jobs are refused when it is set. */
  sandboxProblem: Promise<string | null>;
  /** Where each job's cgroup is made, and its caps. */
  cgroups: JobCgroups;
  caps: CgroupCaps;
  /** Refuse to start a job whose cgroup cannot be made (else it runs without, and cgroupFailed is told). */
  requireCgroup: boolean;
  cgroupFailed(jobId: string, error: Error): void;
  tickMs?: number;
}

/**
 * The supervisor's whole environment: fixed, nothing of the caller's (it runs outside the sandbox, as root
 * when the gateway is). PLATFORM_JOB_ID names the job's processes for operators (and tests).
 */
const SUPERVISOR_ENV = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' };
/** Terminal entries are dropped this long after the end; the service has recorded them by then. */
const FORGET_AFTER_MS = 60_000;

export class LocalJobRuntime implements JobRuntime {
  readonly kind = 'local';
  readonly #entries = new Map<string, Entry>();
  readonly #queue: string[] = [];
  #pumping = false;
  readonly #listeners = new Set<(id: string) => void>();
  /** Pending drops of terminal entries: close cancels them and none start after it, so nothing is held after close. */
  readonly #forgetTimers = new Set<NodeJS.Timeout>();
  #running = 0;
  /** After close nothing new starts: queued jobs stay PENDING and are queued again at the next start. */
  #closed = false;
  readonly #ticker: NodeJS.Timeout;
  /** The sandbox probe's answer; until it comes (undefined), queued jobs wait. */
  #sandboxProblem: string | null | undefined;
  /** Jobs whose cgroup still held a dying process when they ended: removed by a later tick. */
  readonly #cgroupsLeft = new Set<string>();

  constructor(private readonly options: LocalRuntimeOptions) {
    this.#ticker = setInterval(() => this.#tick(), options.tickMs ?? 500);
    this.#ticker.unref();
    void options.sandboxProblem.then((problem) => {
      this.#sandboxProblem = problem;
      this.#pump();
    });
  }

  idFor(jobId: string): string {
    return localRuntimeJobId(jobId);
  }

  async submit(spec: RuntimeJobSpec): Promise<void> {
    if ((await this.options.sandboxProblem) !== null) throw JobsErrors.make.job_sandbox_unavailable();
    const id = this.idFor(spec.jobId);
    this.#entries.set(id, newEntry(spec.jobId, spec));
    this.#queue.push(id);
    this.#pump();
  }

  async status(runtimeJobId: string): Promise<RuntimeSnapshot> {
    const entry = this.#entries.get(runtimeJobId);
    if (entry) return snapshot(entry);
    const exit = readExit(this.#paths(runtimeJobId));
    if (exit) return snapshot(finishedEntry(jobIdOf(runtimeJobId), exit));
    return { status: 'FAILED', errorType: 'runtime_lost', errorMessage: 'the local runtime has no record of this job' };
  }

  openLogs(runtimeJobId: string): Promise<LogSource | null> {
    return openJobLog(this.options.jobsDir, runtimeJobId);
  }

  async stop(runtimeJobId: string): Promise<void> {
    const entry = this.#entries.get(runtimeJobId);
    if (!entry || isTerminal(entry.status)) return;
    entry.stopRequested = true;
    if (entry.pid === null) {
      const queued = this.#queue.indexOf(runtimeJobId);
      if (queued >= 0) this.#queue.splice(queued, 1);
      this.#finish(runtimeJobId, entry, { status: 'STOPPED' });
      return;
    }
    this.#terminate(entry);
  }

  async purge(runtimeJobId: string): Promise<void> {
    const entry = this.#entries.get(runtimeJobId);
    if (entry && !isTerminal(entry.status)) return;
    this.#entries.delete(runtimeJobId);
    this.#releaseCgroup(jobIdOf(runtimeJobId));
    await rm(this.#paths(runtimeJobId).dir, { recursive: true, force: true });
  }

  async recover(jobs: readonly RecoverableJob[]): Promise<void> {
    // Before any job starts here: the cgroups of this data dir's jobs that ended while no gateway could remove
    // them. A running job's is busy and stays (rmdir fails while a process is in it).
    for (const jobId of await readdir(this.options.jobsDir).catch(() => [])) this.options.cgroups.release(jobId);
    for (const job of jobs) {
      const paths = this.#paths(job.runtimeJobId);
      const exit = readExit(paths);
      const pid = exit ? null : livePid(paths);
      if (exit || pid === null) this.#releaseCgroup(job.spec.jobId);
      if (exit) {
        this.#entries.set(job.runtimeJobId, finishedEntry(job.spec.jobId, exit));
      } else if (pid !== null) {
        const entry: Entry = {
          ...newEntry(job.spec.jobId, null),
          status: 'RUNNING',
          pid,
          adopted: true,
          holdsSlot: true,
          startedAt: new Date(),
        };
        this.#entries.set(job.runtimeJobId, entry);
        this.#running++;
      } else if (wasStarted(paths)) {
        this.#entries.set(job.runtimeJobId, {
          ...newEntry(job.spec.jobId, null),
          ...lost('the job process ended while the gateway was down and left no exit status'),
        });
      } else {
        this.#entries.set(job.runtimeJobId, newEntry(job.spec.jobId, job.spec));
        this.#queue.push(job.runtimeJobId);
      }
    }
    this.#pump();
  }

  onChange(listener: (runtimeJobId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Running jobs keep running (they are reconciled at the next start); only pending kills are hastened. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#ticker);
    for (const timer of this.#forgetTimers) clearTimeout(timer);
    this.#forgetTimers.clear();
    const killed: Entry[] = [];
    for (const entry of this.#entries.values()) {
      if (entry.killTimer) clearTimeout(entry.killTimer);
      if (entry.stopRequested && entry.pid !== null && !isTerminal(entry.status)) {
        signalGroup(entry.pid, 'SIGKILL');
        killed.push(entry);
      }
    }
    this.#listeners.clear();
    // The jobs just killed, and those that just ended, may still have processes dying in their cgroups: each
    // cgroup is removed once they are gone (for up to 2 s; one still busy then is left to the next start).
    const busy = () => this.#cgroupsLeft.size > 0 || killed.some((entry) => !isTerminal(entry.status));
    for (let wait = 0; wait < 40 && busy(); wait++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      for (const jobId of this.#cgroupsLeft) this.#releaseCgroup(jobId);
    }
    // The sandbox probe's child (a bwrap run of `true`, bounded at 10 s) ends before the runtime says it has closed.
    await this.options.sandboxProblem;
  }

  #paths(runtimeJobId: string): JobPaths {
    return jobPaths(this.options.jobsDir, jobIdOf(runtimeJobId));
  }

  /**
   * Starts queued jobs while slots are free. Re-entrant calls (a start that
   * fails at once finishes its job, which pumps again) return at once: the
   * loop already running takes the next job, so the stack stays flat however
   * long the queue.
   */
  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      this.#startQueued();
    } finally {
      this.#pumping = false;
    }
  }

  #startQueued(): void {
    if (this.#sandboxProblem === undefined) return; // the probe's answer pumps again
    while (!this.#closed && this.#running < this.options.maxConcurrent && this.#queue.length > 0) {
      const id = this.#queue.shift() as string;
      const entry = this.#entries.get(id);
      if (!entry?.spec || entry.status !== 'PENDING') continue;
      entry.holdsSlot = true;
      this.#running++;
      this.#start(id, entry, entry.spec);
    }
  }

  #start(id: string, entry: Entry, spec: RuntimeJobSpec): void {
    const paths = this.#paths(id);
    try {
      if (this.#sandboxProblem !== null) throw new Error('the job sandbox is unavailable');
      if (spec.packages.length > 0 && !this.options.wheelDir)
        throw new Error('no wheel directory is configured for python_packages');
      prepareJobDir(paths, spec.packages, this.options.sandbox);
      const cgroup = this.#cgroupOf(spec.jobId);
      entry.limits = this.#limits(cgroup);
      entry.pid = spawnJob({
        paths,
        entrypoint: spec.entrypoint,
        jobEnv: jobEnvironment(this.options.baseEnv, paths, spec),
        supervisorEnv: { ...SUPERVISOR_ENV, PLATFORM_JOB_ID: spec.jobId },
        packages: spec.packages,
        python: this.options.python,
        wheelDir: this.options.wheelDir ?? '',
        sandbox: this.options.sandbox,
        cgroup,
        onExit: (code, signal) => this.#exited(id, entry, paths, code, signal),
      });
      entry.status = 'RUNNING';
      entry.startedAt = new Date();
      this.#emit(id);
    } catch (error) {
      this.#finish(id, entry, { status: 'FAILED', errorType: 'spawn_failed', errorMessage: (error as Error).message });
    }
  }

  #exited(id: string, entry: Entry, paths: JobPaths, code: number | null, signal: NodeJS.Signals | null): void {
    if (entry.pid !== null) signalGroup(entry.pid, 'SIGKILL'); // stragglers the entrypoint left in its group
    // RLIMIT_FSIZE stops a job at the cap (SIGXFSZ) before the ticker sees it: the log size tells.
    if (logSize(paths) > this.options.maxLogBytes) entry.errorType = 'log_limit_exceeded';
    const exit = readExit(paths);
    if (exit) this.#finish(id, entry, outcome(exit, entry));
    else if (code === null && signal === null)
      this.#finish(id, entry, {
        status: 'FAILED',
        errorType: 'spawn_failed',
        errorMessage: 'the job process could not be started',
      });
    else this.#finish(id, entry, outcome({ step: 'entrypoint', code: code ?? 128, at: new Date() }, entry, signal));
  }

  #finish(id: string, entry: Entry, result: Pick<Entry, 'status'> & Partial<Entry>): void {
    if (isTerminal(entry.status)) return;
    if (entry.holdsSlot) this.#running--;
    if (entry.killTimer) clearTimeout(entry.killTimer);
    const ended = { endedAt: result.endedAt ?? new Date(), spec: null, killTimer: null, holdsSlot: false };
    Object.assign(entry, { errorType: null, errorMessage: null, ...result, ...ended });
    this.#releaseCgroup(entry.jobId);
    if (!this.#closed) this.#forgetLater(id, entry);
    this.#emit(id);
    this.#pump();
  }

  /** The job's own cgroup, or null to run without (none can be made here, or this one failed and none is required). */
  #cgroupOf(jobId: string): JobCgroup | null {
    const { cgroups, caps, requireCgroup } = this.options;
    if (cgroups.version === null) return null;
    try {
      return cgroups.create(jobId, caps);
    } catch (error) {
      if (requireCgroup) throw new Error(`the job's cgroup could not be made: ${(error as Error).message}`);
      this.options.cgroupFailed(jobId, error as Error);
      return null;
    }
  }

  #limits(cgroup: JobCgroup | null): JobLimits {
    const { isolated, options } = this.options.sandbox;
    return {
      cgroup: cgroup?.version ?? null,
      memoryBytes: cgroup ? this.options.caps.memoryBytes : null,
      // The cgroup's pids.max, or the RLIMIT_NPROC a job without one runs under (sandbox.ts).
      processes: this.options.caps.processes,
      tmpBytes: isolated ? options.limits.tmpBytes : null,
      network: isolated ? options.network : 'host',
    };
  }

  #releaseCgroup(jobId: string): void {
    if (this.options.cgroups.release(jobId)) this.#cgroupsLeft.delete(jobId);
    else this.#cgroupsLeft.add(jobId);
  }

  #forgetLater(id: string, entry: Entry): void {
    const forget = setTimeout(() => {
      this.#forgetTimers.delete(forget);
      if (this.#entries.get(id) === entry) this.#entries.delete(id);
    }, FORGET_AFTER_MS).unref();
    this.#forgetTimers.add(forget);
  }

  #terminate(entry: Entry): void {
    if (entry.pid === null || entry.killTimer) return;
    const pid = entry.pid;
    signalGroup(pid, 'SIGTERM');
    entry.killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), this.options.stopGraceMs);
    entry.killTimer.unref();
  }

  /** Log caps for running jobs; the end of re-attached jobs, which are not our children. */
  #tick(): void {
    for (const jobId of this.#cgroupsLeft) this.#releaseCgroup(jobId);
    for (const [id, entry] of this.#entries) {
      if (entry.status !== 'RUNNING' || entry.pid === null) continue;
      const paths = this.#paths(id);
      if (!entry.stopRequested && logSize(paths) > this.options.maxLogBytes) {
        entry.errorType = 'log_limit_exceeded';
        entry.stopRequested = true;
        this.#terminate(entry);
      }
      if (!entry.adopted) continue;
      const exit = readExit(paths);
      if (exit) this.#finish(id, entry, outcome(exit, entry));
      else if (livePid(paths) === null)
        this.#finish(id, entry, lost('the re-attached job process ended without an exit status'));
    }
  }

  #emit(id: string): void {
    for (const listener of this.#listeners) listener(id);
  }
}

/**
 * What the entrypoint sees: the clean base, HOME = its work dir, then the job's own variables; with
 * packages, the venv first on PATH. Inside the sandbox PATH, LD_PRELOAD and the like reach only the job.
 */
function jobEnvironment(
  baseEnv: Record<string, string>,
  paths: JobPaths,
  spec: RuntimeJobSpec,
): Record<string, string> {
  const env: Record<string, string> = { ...baseEnv, HOME: paths.work, ...spec.env };
  if (spec.packages.length === 0) return env;
  return { ...env, PATH: `${join(paths.venv, 'bin')}:${env.PATH ?? ''}`, VIRTUAL_ENV: paths.venv };
}
