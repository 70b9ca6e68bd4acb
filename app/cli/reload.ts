/**
 * `meshgate reload`: asks the running primary of this data dir to re-read its configuration and replace its workers
 * one at a time (SIGHUP), then waits for the outcome the primary records (app/process/reload-status.ts) and exits
 * 0 only when the reload was applied: a refused or failed reload, one the primary ignored (still starting, or
 * stopping), a primary that ended, or no outcome in time, each exit 1 saying why. The primary is found through its
 * pid file (app/process/pid-file.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from '../../gateway/cli/usage.ts';
import type { CliCommand } from '../../gateway/module.ts';
import { pidFilePath, runningPrimary } from '../process/pid-file.ts';
import { monotonicMs, readReloadStatus } from '../process/reload-status.ts';

/** Long enough for several workers, each given a minute to start (app/process/supervisor.ts), to be replaced. */
const OUTCOME_TIMEOUT_MS = 300_000;
const POLL_MS = 100;

export const reloadCommand: CliCommand = {
  name: 'reload',
  summary: "re-read the configuration and replace the running gateway's workers one at a time",
  usage: 'meshgate reload [--data-dir DIR]',
  async run(args, env) {
    if (args.length > 0) throw new UsageError(`unexpected argument '${args[0]}'`);
    const dataDir = env.config.dataDir;
    const pid = runningPrimary(dataDir);
    if (pid === null) {
      env.err(
        `meshgate reload: no running primary found (${pidFilePath(dataDir)}); ` +
          'a gateway started with --workers 1 is one process: restart it to apply changes',
      );
      return 1;
    }
    const signalledAt = monotonicMs();
    process.kill(pid, 'SIGHUP');
    env.out(`meshgate reload: signalled the primary (pid ${pid}); waiting for the outcome`);
    for (const deadline = signalledAt + OUTCOME_TIMEOUT_MS; monotonicMs() < deadline; await sleep(POLL_MS)) {
      const status = readReloadStatus(dataDir);
      if (status !== null && status.begunAt >= signalledAt) {
        if (status.outcome === 'reloaded') {
          env.out(`meshgate reloaded (${status.detail})`);
          return 0;
        }
        env.err(`meshgate reload ${status.outcome}: ${status.detail}`);
        return 1;
      }
      if (runningPrimary(dataDir) !== pid) {
        env.err(`meshgate reload: the primary (pid ${pid}) ended before it reloaded`);
        return 1;
      }
    }
    env.err(`meshgate reload: no outcome from the primary (pid ${pid}) within ${OUTCOME_TIMEOUT_MS / 1000} s`);
    return 1;
  },
};
