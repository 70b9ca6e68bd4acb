/**
 * `meshgate validate`: checks a configuration without serving, as `nginx -t` and `caddy validate` do. Beyond the
 * settings themselves (read as `serve` reads them: file, environment, flags; a bad value stops here with every
 * problem listed, exit 2), what start would meet: the operator's certificate and key readable, PEM, a pair and
 * not expired; the data dir a folder this user can write, or one it can create; the listen ports free, unless the
 * gateway of this data dir is the one holding them. Exit 0 when all hold, else 2 with one line per problem, each
 * naming its setting. Nothing is left behind: the probes remove what they make.
 */
import { existsSync, mkdtempSync, rmdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { UsageError } from '../../gateway/cli/usage.ts';
import type { Config } from '../../gateway/config/schema.ts';
import { isServing } from '../../gateway/db/serve-lock.ts';
import type { CliCommand } from '../../gateway/module.ts';
import { checkOperatorFiles } from '../../gateway/tls/operator-files.ts';
import { probeBind } from '../listeners.ts';
import { runningPrimary } from '../process/pid-file.ts';

const DATA_DIR_SETTING = 'dataDir (PLATFORM_DATA_DIR, --data-dir)';

/** A folder made and removed inside `dir`: the kernel's own answer to whether this user can create files there. */
function writable(dir: string): string | null {
  try {
    rmdirSync(mkdtempSync(join(dir, '.meshgate-validate-')));
    return null;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  }
}

function dataDirProblems(dataDir: string): string[] {
  let at = resolve(dataDir);
  while (!existsSync(at)) at = dirname(at);
  if (!statSync(at).isDirectory()) return [`${DATA_DIR_SETTING}: ${at} is not a folder`];
  const refused = writable(at);
  if (refused === null) return [];
  const what = at === resolve(dataDir) ? `${at} is not writable` : `${dataDir} cannot be created in ${at}`;
  return [`${DATA_DIR_SETTING}: ${what} (${refused})`];
}

async function portProblems(config: Readonly<Config>): Promise<string[]> {
  const ports: [string, number | null, string][] = [
    ['httpsPort (PLATFORM_HTTPS_PORT, --https-port)', config.httpsPort, config.bind],
    ['httpPort (PLATFORM_HTTP_PORT, --http-port)', config.httpPort, config.bind],
    ['admin.port (PLATFORM_ADMIN_PORT)', config.admin.port, config.admin.bind],
  ];
  const problems: string[] = [];
  for (const [setting, port, host] of ports) {
    if (port === null || port === 0) continue;
    await probeBind(port, host).catch((error: Error) => problems.push(`${setting}: ${error.message}`));
  }
  return problems;
}

function tlsProblems(config: Readonly<Config>): string[] {
  if (config.tlsCertFile === null || config.tlsKeyFile === null) return [];
  const checked = checkOperatorFiles({ certFile: config.tlsCertFile, keyFile: config.tlsKeyFile });
  return [...checked.problems, ...(checked.expired === null ? [] : [checked.expired])];
}

/** Whether a gateway serves the data dir: a primary names itself in its pid file, a single process holds the lock. */
function servedHere(dataDir: string): boolean {
  return existsSync(dataDir) && (runningPrimary(dataDir) !== null || isServing(dataDir));
}

export const validateCommand: CliCommand = {
  name: 'validate',
  summary: 'check a configuration without serving: settings, certificate files, data dir, ports',
  usage: `meshgate validate [--config FILE] [any flag of meshgate serve]

Reads the configuration as 'meshgate serve' would with the same flags and environment, then checks what start
would meet: certificate and key files, the data dir, the listen ports (not checked while this data dir's gateway
runs: it holds them). Exit 0 when valid; 2 with every problem, each naming its setting.`,
  async run(args, env) {
    if (args.length > 0) {
      throw new UsageError(args[0]?.startsWith('-') ? `unknown flag '${args[0]}'` : `unexpected argument '${args[0]}'`);
    }
    const { config } = env;
    const problems = [...dataDirProblems(config.dataDir), ...tlsProblems(config)];
    const serving = servedHere(config.dataDir);
    if (!serving) problems.push(...(await portProblems(config)));
    if (problems.length > 0) {
      env.err(`meshgate validate: ${problems.length === 1 ? 'one problem' : `${problems.length} problems`}`);
      for (const problem of problems) env.err(`  - ${problem}`);
      return 2;
    }
    const ports = serving ? "ports held by this data dir's running gateway" : 'ports free';
    env.out(`meshgate validate: the configuration is valid (data dir ${config.dataDir}, ${ports})`);
    return 0;
  },
};
