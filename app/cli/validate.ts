/**
 * `meshgate validate`: checks a configuration without serving, as `nginx -t` and `caddy validate` do. Beyond the
 * settings themselves (read as `serve` reads them: file, environment, flags; a bad value stops here with every
 * problem listed, exit 2), what start would meet: the operator's certificate and key readable, PEM, a pair and
 * not expired; the data dir a folder this user can write, or one it can create; the listen ports free, unless the
 * gateway of this data dir is the one holding them; with ACME, the directory's roots file and the account binding's
 * key file readable (the settings themselves: a DNS name to order, not beside tlsCertFile). Exit 0 when all hold,
 * else 2 with one line per problem, each naming its setting. Nothing is left behind: the probes remove what they make.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmdirSync, statSync } from 'node:fs';
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
    ['tls.acme.httpPort (PLATFORM_ACME_HTTP_PORT)', acmeHttpPort(config), config.bind],
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

/** The HTTP-01 listener's port, when ACME binds one. */
function acmeHttpPort(config: Readonly<Config>): number | null {
  const acme = config.tls.acme;
  return acme.directoryUrl !== null && acme.challenges.includes('http-01') ? acme.httpPort : null;
}

/** The files ACME reads at its first order, read now: the directory's roots and the account binding's MAC key. */
function acmeProblems(config: Readonly<Config>): string[] {
  const acme = config.tls.acme;
  if (acme.directoryUrl === null) return [];
  const problems: string[] = [];
  if (acme.directoryCaFile !== null) {
    const setting = 'tls.acme.directoryCaFile (PLATFORM_ACME_DIRECTORY_CA_FILE)';
    try {
      new X509Certificate(readFileSync(acme.directoryCaFile, 'utf8'));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      problems.push(
        `${setting}: ${acme.directoryCaFile} ${code ? `cannot be read (${code})` : 'holds no PEM certificate'}`,
      );
    }
  }
  const binding = acme.externalAccountBinding;
  if (binding !== null) {
    const setting = 'tls.acme.externalAccountBinding.hmacKeyFile';
    try {
      // The key is never echoed: only whether it is base64url (RFC 8555 §7.3.4).
      if (!/^[A-Za-z0-9_-]+={0,2}$/.test(readFileSync(binding.hmacKeyFile, 'utf8').trim())) {
        problems.push(`${setting}: ${binding.hmacKeyFile} does not hold a base64url key`);
      }
    } catch (error) {
      problems.push(`${setting}: ${binding.hmacKeyFile} cannot be read (${(error as NodeJS.ErrnoException).code})`);
    }
  }
  return problems;
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
    const problems = [...dataDirProblems(config.dataDir), ...tlsProblems(config), ...acmeProblems(config)];
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
