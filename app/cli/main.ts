/**
 * The `meshgate` command. `serve` is the gateway's own; every other
 * subcommand comes from a domain (HandlerModule.commands) and boots the
 * domains it needs through the composition root (app/domains.ts).
 */
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { versionLine } from '../../gateway/build-info.ts';
import { isUsageError, USAGE_EXIT_CODE } from '../../gateway/cli/usage.ts';
import { ConfigError, loadConfig } from '../../gateway/config/load.ts';
import type { ConfigInput } from '../../gateway/config/schema.ts';
import type { CliCommand, CliEnv } from '../../gateway/module.ts';
import { bootDomains, DOMAIN_COMMANDS } from '../domains.ts';
import { backupCommand, restoreCommand } from './backup.ts';
import { certCommand } from './cert.ts';
import { CONFIG_FILE_FLAG, configFlagOptions, configFromFlags } from './flags.ts';
import { reloadCommand } from './reload.ts';
import { serveAsWorker, serveCommand } from './serve.ts';
import { validateCommand } from './validate.ts';

const COMMANDS: readonly CliCommand[] = [
  serveCommand,
  validateCommand,
  certCommand,
  reloadCommand,
  backupCommand,
  restoreCommand,
  ...DOMAIN_COMMANDS,
];

function help(): string {
  const lines = COMMANDS.map((c) => `  ${c.name.padEnd(16)}${c.summary}`);
  const synopsis = 'usage: meshgate <command> [options] | meshgate --version';
  const flags = "every command takes the config flags of 'meshgate serve --help' (e.g. --data-dir)";
  return `${synopsis}\n\ncommands:\n${lines.join('\n')}\n\n${flags}`;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(argv: string[]): Promise<number> {
  // A worker of a primary runs as a worker whatever its arguments say. node:cluster forks the primary's script
  // with the primary's Node options and arguments; a single executable takes all of those as its own arguments
  // (https://nodejs.org/api/single-executable-applications.html), so the worker's argv is not a command line.
  if (cluster.isWorker) return serveAsWorker();
  const [name, ...rest] = argv;
  if (name === '--version' || name === 'version') {
    process.stdout.write(`${versionLine()}\n`);
    return 0;
  }
  if (!name || name === '--help' || name === 'help') {
    process.stdout.write(`${help()}\n`);
    return name ? 0 : 2;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`meshgate: unknown command '${name}'\n${help()}\n`);
    return 2;
  }
  if (rest.includes('--help')) {
    process.stdout.write(`usage:\n${command.usage}\n`);
    return 0;
  }
  try {
    return await runCommand(command, rest);
  } catch (error) {
    if (!isUsageError(error)) throw error;
    // The synopsis only (a usage's first paragraph); --help shows the rest.
    const synopsis = command.usage.split('\n\n')[0];
    const more = `(meshgate ${command.name} --help for more)`;
    process.stderr.write(`meshgate ${command.name}: ${error.message}\nusage:\n${synopsis}\n${more}\n`);
    return USAGE_EXIT_CODE;
  }
}

async function runCommand(command: CliCommand, args: string[]): Promise<number> {
  // Config flags are common to all commands; the rest go to the command.
  const { values, tokens } = parseArgs({ args, options: configFlagOptions, strict: false, tokens: true });
  const configOverrides: ConfigInput = configFromFlags(values);
  const commandArgs = remainingArgs(args, tokens ?? []);
  const file = values[CONFIG_FILE_FLAG];
  let config: ReturnType<typeof loadConfig>;
  const readConfig = () =>
    loadConfig({ overrides: configOverrides, file: typeof file === 'string' ? file : undefined });
  try {
    config = readConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`meshgate: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const err = (line: string) => process.stderr.write(`${line}\n`);
  const env: CliEnv = {
    config,
    reloadConfig: readConfig,
    boot: (modules) => bootDomains(config, modules, { err }),
    readStdin,
    out: (line) => process.stdout.write(`${line}\n`),
    err,
  };
  return command.run(commandArgs, env);
}

/** The args that were not config flags, in order. */
function remainingArgs(args: string[], tokens: ReturnType<typeof parseArgs>['tokens'] & object): string[] {
  const consumed = new Set<number>();
  for (const token of tokens) {
    if (token.kind === 'option' && token.name in configFlagOptions) {
      consumed.add(token.index);
      if (token.value !== undefined && !token.inlineValue) consumed.add(token.index + 1);
    }
  }
  return args.filter((_, i) => !consumed.has(i));
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== -1) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`meshgate: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
