/**
 * `meshgate serve --workers N` (N > 1): this process becomes the primary.
 * It boots every domain in the `primary` role, which owns the once-only
 * work (the local job runtime and its children, legacy port listeners,
 * first-start setup, log sweeps) and binds no main listener; then it forks
 * N workers that serve the ports (node:cluster) and supervises them. SIGHUP
 * re-reads the configuration and replaces the workers one at a time; SIGTERM
 * or SIGINT drains them all and stops.
 */
import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { isSea } from 'node:sea';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { Config } from '../../gateway/config/schema.ts';
import { makePrivateDir } from '../../gateway/db/storage.ts';
import { PrimaryLink } from '../../gateway/process/cluster-link.ts';
import { probeBind } from '../listeners.ts';
import { startGateway } from '../server.ts';
import { DRAIN_GRACE_MS } from './messages.ts';
import { claimPidFile, releasePidFile } from './pid-file.ts';
import { releaseStartupMemory } from './release-memory.ts';
import { monotonicMs, type ReloadOutcome, writeReloadStatus } from './reload-status.ts';
import { Supervisor, type WorkerReady } from './supervisor.ts';

export interface PrimaryIo {
  /** The configuration read again as at start (file, environment, flags), for a reload. */
  reloadConfig(): Readonly<Config>;
  out(line: string): void;
  /** The first stop signal. */
  readonly stopSignal: Promise<NodeJS.Signals>;
}

/** How many workers the setting asks for: `auto` is one per core the process may use. */
export function workerCount(config: Readonly<Config>): number {
  return config.workers === 'auto' ? availableParallelism() : config.workers;
}

export async function runPrimary(config: Readonly<Config>, io: PrimaryIo): Promise<NodeJS.Signals> {
  // One handler for the process's life, acting on the current state: a hang-up before the workers serve would
  // otherwise meet the default action (the primary killed), and one sent while handlers were swapped would be lost.
  const ignored = (why: string) => () => report(config.dataDir, io, 'ignored', why, monotonicMs());
  let onHangup = ignored('still starting');
  const hangup = () => onHangup();
  process.on('SIGHUP', hangup);
  try {
    const { gateway, supervisor, resolved } = await startPrimary(config, io);
    onHangup = reloader(supervisor, resolved, io, gateway.deps.logger);
    const signal = await io.stopSignal;
    onHangup = ignored('stopping');
    await supervisor.stop(DRAIN_GRACE_MS);
    await gateway.close(DRAIN_GRACE_MS, signal);
    releasePidFile(config.dataDir);
    return signal;
  } finally {
    process.off('SIGHUP', hangup);
  }
}

/**
 * What the primary's own work runs on, or every worker must share with it: a reload that changes one is refused,
 * whole (a restart applies it). Workers on another data dir or database would serve other users and keys than the
 * primary's job runtime and legacy ports see. The jobs settings a worker reads per request reload as the rest do.
 */
const RESTART_ONLY: readonly (readonly string[])[] = [
  ['dataDir'],
  ['database'],
  ['nodeKeyFile'],
  ['nodeKey'],
  ['workerListen'],
  ['jobs', 'runtime'],
  ['jobs', 'local'],
  ['jobs', 'ray'],
  ['jobs', 'logRetentionSeconds'],
  ['jobs', 'pythonPackages', 'wheelDir'],
];

/** The restart-only settings `next` changes against `started`, by their dotted names. */
function restartOnlyChanges(next: Readonly<Config>, started: Readonly<Config>): string[] {
  const at = (config: Readonly<Config>, path: readonly string[]) =>
    path.reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], config);
  return RESTART_ONLY.filter((path) => !isDeepStrictEqual(at(next, path), at(started, path))).map((p) => p.join('.'));
}

/** The primary's domains, then its workers; whatever fails leaves nothing running and no pid file. */
async function startPrimary(config: Readonly<Config>, io: PrimaryIo) {
  // Every worker must bind the same ports, and the primary's origin must name them: port 0 is resolved once here.
  const resolved = await resolvePorts(config, null);
  makePrivateDir(config.dataDir);
  claimPidFile(config.dataDir);
  // Structured clone across the pipe: Dates and Buffers in owner calls arrive as they left. A single executable
  // gives each worker its own built-in Node options, and would take the primary's as arguments: none are passed.
  cluster.setupPrimary({ serialization: 'advanced', ...(isSea() ? { execArgv: [] } : {}) });
  const link = new PrimaryLink();
  const gateway = await startGateway(resolved, { process: link, announce: io.out }).catch((error: unknown) => {
    releasePidFile(config.dataDir);
    throw error;
  });
  const supervisor = new Supervisor(resolved, link, gateway.deps.logger);
  let ready: WorkerReady;
  try {
    ready = await supervisor.start(workerCount(resolved));
  } catch (error) {
    await supervisor.stop(0);
    await gateway.close(0, 'start failed');
    releasePidFile(config.dataDir);
    throw error;
  }
  gateway.workersServing();
  io.out(`meshgate listening ${ready.httpsUrl}`);
  if (ready.httpUrl) io.out(`meshgate listening ${ready.httpUrl}`);
  io.out(`meshgate origin ${ready.origin}  (${workerCount(resolved)} workers, primary pid ${process.pid})`);
  releaseStartupMemory();
  return { gateway, supervisor, resolved };
}

/** SIGHUP: one reload at a time; a hang-up during a reload runs another after it, with the file read then. */
function reloader(supervisor: Supervisor, started: Readonly<Config>, io: PrimaryIo, logger: Logger): () => void {
  let running: Promise<void> = Promise.resolve();
  return () => {
    running = running.then(async () => {
      const begunAt = monotonicMs();
      let outcome: [ReloadOutcome, string];
      try {
        const next = await resolvePorts(io.reloadConfig(), started);
        const changed = restartOnlyChanges(next, started);
        if (changed.length > 0) throw new Error(`${changed.join(', ')} changed: the primary's settings take a restart`);
        outcome = ['reloaded', `${await supervisor.reload(next)} workers replaced`];
      } catch (error) {
        // The workers that were serving keep serving: a bad file or a worker that cannot start changes nothing.
        logger.error({ err: error }, 'reload failed; the running workers keep serving');
        outcome = ['failed', error instanceof Error ? error.message : String(error)];
      }
      report(started.dataDir, io, ...outcome, begunAt);
    });
  };
}

/** A reload's outcome: printed (`meshgate reloaded (…)`, `meshgate reload failed: …`), kept for `meshgate reload`. */
function report(dataDir: string, io: PrimaryIo, outcome: ReloadOutcome, detail: string, begunAt: number): void {
  io.out(outcome === 'reloaded' ? `meshgate reloaded (${detail})` : `meshgate reload ${outcome}: ${detail}`);
  try {
    writeReloadStatus(dataDir, { outcome, detail, begunAt });
  } catch (error) {
    // A full or read-only disk must not take the primary down with a reload's bookkeeping: the command waiting on
    // it gives up after its timeout, and this says why.
    io.out(`meshgate reload: its outcome could not be recorded for meshgate reload: ${(error as Error).message}`);
  }
}

/**
 * Port 0 becomes a free port, picked once: at start by binding it briefly, at a reload the one picked at start
 * (the running workers hold it). At start a given port is bound briefly too, so one that is taken stops start before
 * any user exists, as a single process's start does (the workers bind later, after the primary's first-start setup).
 */
async function resolvePorts(config: Readonly<Config>, started: Readonly<Config> | null): Promise<Readonly<Config>> {
  const pick = async (port: number, before: number | null | undefined) =>
    started === null || (port === 0 && before == null)
      ? await probeBind(port, config.bind)
      : port || (before as number);
  const httpsPort = await pick(config.httpsPort, started?.httpsPort);
  const httpPort = config.httpPort === null ? null : await pick(config.httpPort, started?.httpPort);
  return { ...config, httpsPort, httpPort };
}
