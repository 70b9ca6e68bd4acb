/**
 * `meshgate serve`: start the gateway and print, once listening, the lines
 * scripts and tests wait for (issue 2, operator interface):
 *   meshgate listening https://<bind>:<port>
 *   meshgate listening http://<bind>:<port>      (only with --http-port)
 * SIGTERM/SIGINT close gracefully: no new connections, in-flight requests finish.
 */
import { join } from 'node:path';
import type { CliCommand } from '../../gateway/module.ts';
import { startGateway } from '../server.ts';

export const serveCommand: CliCommand = {
  name: 'serve',
  summary: 'start the gateway',
  usage: `meshgate serve [--data-dir DIR] [--https-port N] [--http-port N] [--bind ADDR]
               [--hostname NAME]... [--cluster-name NAME] [--log-level LEVEL] [--config FILE]
  every flag also reads from env: PLATFORM_DATA_DIR, PLATFORM_HTTPS_PORT, PLATFORM_HTTP_PORT,
  PLATFORM_BIND, PLATFORM_HOSTNAMES (comma-separated), PLATFORM_CLUSTER_NAME, PLATFORM_LOG_LEVEL;
  PLATFORM_BOOTSTRAP_ADMIN_PASSWORD sets the first admin's password (else one is printed once).`,
  async run(args, env) {
    if (args.length > 0) {
      env.err(`meshgate serve: unexpected argument '${args[0]}'`);
      return 2;
    }
    const gateway = await startGateway(env.config, { announce: env.out });
    env.out(`meshgate listening ${gateway.httpsUrl}`);
    if (gateway.httpUrl) env.out(`meshgate listening ${gateway.httpUrl}`);
    env.out(`meshgate origin ${gateway.origin}  (platform CA: ${join(env.config.dataDir, 'tls', 'ca.pem')})`);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });
    await gateway.close(10_000);
    return 0;
  },
};
