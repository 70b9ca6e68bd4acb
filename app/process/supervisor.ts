/**
 * The primary's supervision of its workers (node:cluster): N slots, each
 * held by one worker. A worker that dies unplanned is replaced after a
 * backoff that doubles per consecutive failure (capped; reset once a worker
 * has served a while), as systemd's `Restart=` with `RestartSec` steps or
 * Erlang supervisors' restart intensity do. Reload replaces the slots one
 * at a time: the new worker is up and serving before the old one drains,
 * so the ports always have a worker and nothing in flight is cut.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { Config } from '../../gateway/config/schema.ts';
import type { PrimaryLink } from '../../gateway/process/cluster-link.ts';
import { DRAIN_GRACE_MS, isSupervision, type ToPrimary, type ToWorker } from './messages.ts';

const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 10_000;
/** A worker that served this long resets its slot's backoff: its death is not part of a crash loop. */
const STABLE_AFTER_MS = 30_000;
/** A worker must be serving within this long of its fork (it opens the database and boots every domain). */
const READY_TIMEOUT_MS = 60_000;
/** Beyond the drain grace, how long a draining worker may take to exit before it is killed. */
const EXIT_MARGIN_MS = 2000;

/**
 * glibc's malloc settings for each worker, unless the environment sets them: one arena, trimmed above 128 KiB,
 * allocations up to 4 MiB from the arena rather than each its own mmap (a set trim threshold fixes glibc's otherwise
 * dynamic mmap threshold at 128 KiB; packaging/meshgate.service), as bin/meshgate exports them. glibc reads them
 * only from the environment at a process's start, so the single executable, which cannot set them for itself, still
 * gives them to the workers it forks, which hold the load (bench/README.md, proxy: RSS per worker; retrieval).
 */
export function workerMallocEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return {
    MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? '1',
    MALLOC_TRIM_THRESHOLD_: env.MALLOC_TRIM_THRESHOLD_ ?? '131072',
    MALLOC_MMAP_THRESHOLD_: env.MALLOC_MMAP_THRESHOLD_ ?? '4194304',
  };
}

/** The wait before a slot's next worker: 100 ms after the first failure, doubling per consecutive one, 10 s at most. */
export function restartDelay(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** failures);
}

export interface WorkerReady {
  readonly httpsUrl: string;
  readonly httpUrl: string | null;
  readonly origin: string;
}

interface Slot {
  readonly index: number;
  worker: Worker | null;
  /** The configuration the slot's worker was started on. */
  config: Readonly<Config> | null;
  /** A worker being started into the slot: one at a time, so none is started beside another and left running. */
  filling: Promise<unknown> | null;
  failures: number;
  readyAt: number;
  restart: NodeJS.Timeout | null;
}

export class Supervisor {
  readonly #slots: Slot[] = [];
  /** Workers leaving on purpose (drained on reload or stop): their exit is not a crash. */
  readonly #leaving = new WeakSet<Worker>();
  #config: Readonly<Config>;
  #stopping = false;

  constructor(
    config: Readonly<Config>,
    private readonly link: PrimaryLink,
    private readonly logger: Logger,
  ) {
    this.#config = config;
  }

  /** Forks `count` workers and resolves once all serve; any that fails to start fails start. */
  async start(count: number): Promise<WorkerReady> {
    const started = await Promise.allSettled(
      Array.from({ length: count }, async (_, index) => {
        const slot: Slot = { index, worker: null, config: null, filling: null, failures: 0, readyAt: 0, restart: null };
        this.#slots.push(slot);
        return this.#fill(slot);
      }),
    );
    // Every fork has settled, so stopping now leaves none of them behind.
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    return (started[0] as PromiseFulfilledResult<WorkerReady>).value;
  }

  /**
   * Replaces every worker, one at a time, with one started on `config`. When one cannot start, the reload is undone:
   * every worker started on it (by the reload, or restarted meanwhile) is replaced again on the configuration that
   * served, which every later restart uses too.
   */
  async reload(config: Readonly<Config>): Promise<number> {
    const previous = this.#config;
    this.#config = config;
    let replaced = 0;
    try {
      for (const slot of this.#slots) {
        if (this.#stopping) break;
        await this.#replace(slot);
        replaced += 1;
      }
    } catch (error) {
      this.#config = previous;
      for (const slot of this.#slots) {
        await slot.filling?.catch(() => {});
        if (this.#stopping) break;
        // An empty slot's restart (scheduled when its start failed) uses the configuration restored above.
        if (slot.config === previous || slot.worker === null) continue;
        await this.#replace(slot).catch((undo: unknown) =>
          this.logger.error({ err: undo, slot: slot.index }, 'reload: a worker could not go back to the configuration'),
        );
      }
      throw error;
    }
    return replaced;
  }

  async #replace(slot: Slot): Promise<void> {
    await slot.filling?.catch(() => {});
    if (this.#stopping) return;
    // A slot waiting out a crash backoff (one that may have begun while the start above failed) is filled now, by
    // the reload, not twice.
    if (slot.restart) clearTimeout(slot.restart);
    slot.restart = null;
    const old = slot.worker;
    await this.#fill(slot);
    if (old) await this.#drain(old);
  }

  /** Drains every worker at once and waits for them to exit. */
  async stop(graceMs = DRAIN_GRACE_MS): Promise<void> {
    this.#stopping = true;
    for (const slot of this.#slots) if (slot.restart) clearTimeout(slot.restart);
    // A worker still starting drains itself once it is up (#start): waited for too, so none outlives the stop.
    const starting = this.#slots.map((slot) => slot.filling?.catch(() => {}));
    await Promise.all([
      ...this.#slots.flatMap((slot) => (slot.worker ? [this.#drain(slot.worker, graceMs)] : [])),
      ...starting,
    ]);
  }

  /** Forks a worker into the slot and waits until it serves; `filling` while it starts. */
  #fill(slot: Slot): Promise<WorkerReady> {
    const filling = this.#start(slot);
    slot.filling = filling;
    filling.then(
      () => {
        if (slot.filling === filling) slot.filling = null;
      },
      () => {
        if (slot.filling === filling) slot.filling = null;
        // Nothing else fills an empty slot: a start that failed is tried again after the slot's backoff.
        if (!this.#stopping && slot.worker === null && slot.restart === null) this.#restartLater(slot);
      },
    );
    return filling;
  }

  async #start(slot: Slot): Promise<WorkerReady> {
    const config = this.#config;
    const worker = cluster.fork(workerMallocEnv(process.env));
    this.link.attach(worker);
    const ready = await this.#ready(worker, config);
    if (this.#stopping) {
      // Stop came while it was starting: it leaves with the others rather than outlive the primary.
      await this.#drain(worker);
      return ready;
    }
    slot.worker = worker;
    slot.config = config;
    slot.readyAt = Date.now();
    worker.once('exit', (code, signal) => this.#exited(slot, worker, code, signal));
    this.logger.info({ worker: worker.process.pid, slot: slot.index }, 'worker serving');
    return ready;
  }

  #ready(worker: Worker, config: Readonly<Config>): Promise<WorkerReady> {
    return new Promise((resolve, reject) => {
      const fail = (why: string) => {
        cleanup();
        this.#leaving.add(worker);
        worker.process.kill('SIGKILL');
        reject(new Error(why));
      };
      const timer = setTimeout(() => fail(`a worker did not start within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
      const onExit = (code: number | null, signal: string | null) =>
        fail(`a worker exited while starting (${signal ?? `code ${code}`})`);
      const onMessage = (message: unknown) => {
        if (!isSupervision<ToPrimary>(message)) return;
        if (message.supervise === 'failed') fail(message.message);
        else {
          cleanup();
          resolve(message);
        }
      };
      const cleanup = () => {
        clearTimeout(timer);
        worker.off('exit', onExit);
        worker.off('message', onMessage);
      };
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      worker.once('online', () => this.#send(worker, { supervise: 'start', config }));
    });
  }

  /** Tells the worker to drain and waits for its exit; one that overstays the grace is killed. */
  #drain(worker: Worker, graceMs = DRAIN_GRACE_MS): Promise<void> {
    this.#leaving.add(worker);
    if (worker.isDead()) return Promise.resolve();
    return new Promise((resolve) => {
      const kill = setTimeout(() => worker.process.kill('SIGKILL'), graceMs + EXIT_MARGIN_MS);
      worker.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      this.#send(worker, { supervise: 'drain', graceMs });
    });
  }

  #exited(slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
    if (slot.worker === worker) slot.worker = null;
    if (this.#leaving.has(worker) || this.#stopping) return;
    if (Date.now() - slot.readyAt >= STABLE_AFTER_MS) slot.failures = 0;
    this.logger.error({ worker: worker.process.pid, slot: slot.index, code, signal }, 'worker died; replacing it');
    this.#restartLater(slot);
  }

  #restartLater(slot: Slot): void {
    const delay = restartDelay(slot.failures);
    slot.failures += 1;
    slot.restart = setTimeout(() => {
      slot.restart = null;
      // Filled meanwhile (a reload): nothing to restart.
      if (this.#stopping || slot.worker !== null || slot.filling !== null) return;
      // A replacement that fails to start is one more failure: #fill schedules the next try, which waits longer.
      this.#fill(slot).catch((error: unknown) => {
        this.logger.error(
          { err: error, slot: slot.index, failures: slot.failures },
          'worker replacement failed to start',
        );
      });
    }, delay);
  }

  #send(worker: Worker, message: ToWorker): void {
    if (worker.isConnected()) worker.send(message);
  }
}
