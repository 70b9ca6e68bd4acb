/**
 * `meshgate reload`: asks the running primary of this data dir to re-read
 * its configuration and replace its workers one at a time (SIGHUP). The
 * primary is found through its pid file (app/process/pid-file.ts); the
 * outcome is printed by the primary (`meshgate reloaded ...` or
 * `meshgate reload failed: ...`) and logged.
 */
import { UsageError } from '../../gateway/cli/usage.ts';
import type { CliCommand } from '../../gateway/module.ts';
import { pidFilePath, runningPrimary } from '../process/pid-file.ts';

export const reloadCommand: CliCommand = {
  name: 'reload',
  summary: "re-read the configuration and replace the running gateway's workers one at a time",
  usage: 'meshgate reload [--data-dir DIR]',
  async run(args, env) {
    if (args.length > 0) throw new UsageError(`unexpected argument '${args[0]}'`);
    const pid = runningPrimary(env.config.dataDir);
    if (pid === null) {
      env.err(
        `meshgate reload: no running primary found (${pidFilePath(env.config.dataDir)}); ` +
          'a gateway started with --workers 1 is one process: restart it to apply changes',
      );
      return 1;
    }
    process.kill(pid, 'SIGHUP');
    env.out(`meshgate reload: signalled the primary (pid ${pid})`);
    return 0;
  },
};
