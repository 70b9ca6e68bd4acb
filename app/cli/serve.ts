/**
 * `meshgate serve`: start the gateway and print, once listening, the lines
 * scripts and tests wait for:
 *   meshgate listening https://<bind>:<port>
 *   meshgate listening http://<bind>:<port>      (only with --http-port)
 *   meshgate origin <origin>  (platform CA: <file>)
 * preceded, on a first start, by the bootstrap admin's one-time password
 * (printed only once the listeners are up). SIGTERM and SIGINT close
 * gracefully (no new connections, in-flight requests finish) and end with
 * `meshgate stopped (<signal>)`; a second signal during that stops at once.
 * With `--workers N` (N > 1) this process is the primary of N workers
 * (app/process/primary.ts), and SIGHUP reloads them one at a time; a
 * worker is this same command forked by node:cluster (app/process/worker.ts).
 */
import { join } from 'node:path';
import { UsageError } from '../../gateway/cli/usage.ts';
import type { CliCommand } from '../../gateway/module.ts';
import { DRAIN_GRACE_MS } from '../process/messages.ts';
import { runPrimary, workerCount } from '../process/primary.ts';
import { releaseStartupMemory } from '../process/release-memory.ts';
import { runWorker } from '../process/worker.ts';
import { startGateway } from '../server.ts';
import { configFlagOptions } from './flags.ts';
import { renderHelp, SERVE_SETTINGS } from './settings.ts';

const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** A worker of a primary (node:cluster forks this same command): it takes its configuration from the primary. */
export async function serveAsWorker(): Promise<number> {
  const code = await runWorker();
  // Closing the pipe lets the process end once its last log lines are written (an exit now could cut them).
  process.disconnect?.();
  return code;
}

/** `[--data-dir DIR] ... [--hostname NAME]...`: the config flags, a repeatable one marked so. */
const flagSynopsis = SERVE_SETTINGS.flatMap((s) => {
  if (!s.flag) return [];
  const repeats = configFlagOptions[s.flag]?.multiple ? '...' : '';
  return [`[--${s.flag} ${s.value}]${repeats}`];
}).join(' ');

/**
 * The first SIGTERM or SIGINT; after it both go back to the default action,
 * so a second one ends a close that hangs.
 */
function stopSignals(): { signal: Promise<NodeJS.Signals>; cancel(): void } {
  let stop: (name: NodeJS.Signals) => void = () => {};
  const cancel = () => {
    for (const name of STOP_SIGNALS) process.off(name, stop);
  };
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    stop = (name) => {
      cancel();
      resolve(name);
    };
  });
  for (const name of STOP_SIGNALS) process.on(name, stop);
  return { signal, cancel };
}

export const serveCommand: CliCommand = {
  name: 'serve',
  summary: 'start the gateway',
  // Rendered when asked for (--help, a usage error), not at every start: it parses the configuration's defaults.
  get usage() {
    return `meshgate serve ${flagSynopsis}

settings (a flag wins over its environment variable, which wins over the --config file):
${renderHelp()}`;
  },
  async run(args, env) {
    if (args.length > 0) {
      throw new UsageError(args[0]?.startsWith('-') ? `unknown flag '${args[0]}'` : `unexpected argument '${args[0]}'`);
    }
    // Listening for the stop signals before start, not after the ready lines: a supervisor that signals as soon as
    // it reads them would otherwise meet the default action (killed, no graceful close).
    const { signal: stopSignal, cancel } = stopSignals();
    if (workerCount(env.config) > 1) {
      const reloadConfig = env.reloadConfig ?? (() => env.config);
      const signal = await runPrimary(env.config, { reloadConfig, out: env.out, stopSignal }).finally(cancel);
      env.out(`meshgate stopped (${signal})`);
      return 0;
    }
    const hangUp = () =>
      env.err('meshgate: reload needs workers (--workers N, N > 1); restart this process to apply changes');
    process.on('SIGHUP', hangUp);
    const gateway = await startGateway(env.config, { announce: env.out }).catch((error: unknown) => {
      cancel();
      throw error;
    });
    env.out(`meshgate listening ${gateway.httpsUrl}`);
    if (gateway.httpUrl) env.out(`meshgate listening ${gateway.httpUrl}`);
    env.out(`meshgate origin ${gateway.origin}  (platform CA: ${join(env.config.dataDir, 'tls', 'ca.pem')})`);
    releaseStartupMemory();
    const signal = await stopSignal;
    process.off('SIGHUP', hangUp);
    await gateway.close(DRAIN_GRACE_MS, signal);
    env.out(`meshgate stopped (${signal})`);
    return 0;
  },
};
