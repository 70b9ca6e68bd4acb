/**
 * The `meshgate` command. `serve` is the gateway's own; every other
 * subcommand comes from a domain (HandlerModule.commands) and boots the
 * domains it needs through the composition root (app/domains.ts).
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../../gateway/config/load.ts';
import type { ConfigInput } from '../../gateway/config/schema.ts';
import type { CliCommand, CliEnv } from '../../gateway/module.ts';
import { bootDomains, DOMAIN_COMMANDS } from '../domains.ts';
import { configFlagOptions, configFromFlags } from './flags.ts';
import { serveCommand } from './serve.ts';

const COMMANDS: readonly CliCommand[] = [serveCommand, ...DOMAIN_COMMANDS];

function help(): string {
  const lines = COMMANDS.map((c) => `  ${c.name.padEnd(16)}${c.summary}`);
  return `usage: meshgate <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nevery command takes the config flags of 'meshgate serve --help' (e.g. --data-dir)`;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
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
  // Config flags are common to all commands; the rest go to the command.
  const { values, tokens } = parseArgs({ args: rest, options: configFlagOptions, strict: false, tokens: true });
  const configOverrides: ConfigInput = configFromFlags(values);
  const commandArgs = remainingArgs(rest, tokens ?? []);
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig({ overrides: configOverrides, file: typeof values.config === 'string' ? values.config : undefined });
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
