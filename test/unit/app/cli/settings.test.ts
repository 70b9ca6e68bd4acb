/**
 * The settings table (app/cli/settings.ts) is the one list of what an
 * operator can set: `serve --help` is rendered from it, README's table must
 * hold its rows, and it must name every variable the config loader reads.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configFlagOptions, configFromFlags } from '../../../../app/cli/flags.ts';
import { serveCommand } from '../../../../app/cli/serve.ts';
import { renderMarkdownRow, SERVE_SETTINGS } from '../../../../app/cli/settings.ts';
import { UsageError } from '../../../../gateway/cli/usage.ts';
import { loadConfig } from '../../../../gateway/config/load.ts';
import { ENV_NAMES } from '../../../../gateway/config/schema.ts';

const CONFIG_DIR = fileURLToPath(new URL('../../../../gateway/config/', import.meta.url));
const README = readFileSync(fileURLToPath(new URL('../../../../README.md', import.meta.url)), 'utf8');

/** Every PLATFORM_* name the loader maps, plus any it reads by name in its own source (the config file). */
function variablesTheLoaderReads(): Set<string> {
  const names = new Set(Object.keys(ENV_NAMES));
  for (const file of readdirSync(CONFIG_DIR).filter((f) => f.endsWith('.ts'))) {
    for (const [name] of readFileSync(`${CONFIG_DIR}${file}`, 'utf8').matchAll(/PLATFORM_[A-Z0-9_]+/g)) names.add(name);
  }
  return names;
}

/** The rows of README's table under "## Operating it". */
function readmeRows(): string[] {
  const section = README.slice(README.indexOf('## Operating it'));
  const table = section.slice(section.indexOf('| flag | env | default | meaning |'));
  const lines = table.split('\n');
  return lines.slice(
    2,
    lines.findIndex((line) => !line.startsWith('|')),
  );
}

test('the settings table names every variable the config loader reads, each once, and nothing else', () => {
  const listed = SERVE_SETTINGS.flatMap((s) => s.env);
  assert.equal(new Set(listed).size, listed.length, 'no variable in two rows');
  assert.deepEqual(new Set(listed), variablesTheLoaderReads());
});

test('serve --help lists every variable the config loader reads, and every config flag', () => {
  const help = serveCommand.usage;
  for (const name of variablesTheLoaderReads()) {
    assert.match(help, new RegExp(`\\b${name}\\b`), `${name} not in serve --help`);
  }
  for (const flag of Object.keys(configFlagOptions)) {
    assert.ok(help.includes(`--${flag} `), `--${flag} not in serve --help`);
  }
});

test("README's Operating it table holds exactly the table's rows, so every variable is documented there", () => {
  const rows = readmeRows();
  assert.deepEqual(
    rows,
    SERVE_SETTINGS.map(renderMarkdownRow),
    'README.md out of step with app/cli/settings.ts: run npx tsx scripts/settings-doc.ts',
  );
  for (const name of variablesTheLoaderReads())
    assert.ok(
      rows.some((row) => row.includes(`\`${name}\``)),
      `${name} missing from README`,
    );
});

test('a flag sets the same key as its variable', () => {
  const samples: Record<string, { flag: string[]; env: string }> = {
    'data-dir': { flag: ['/srv/meshgate'], env: '/srv/meshgate' },
    'https-port': { flag: ['0'], env: '0' },
    'http-port': { flag: ['none'], env: 'none' },
    bind: { flag: ['::1'], env: '::1' },
    hostname: { flag: ['a.example', 'b.example'], env: 'a.example,b.example' },
    'cluster-name': { flag: ['east'], env: 'east' },
    'log-level': { flag: ['debug'], env: 'debug' },
    workers: { flag: ['3'], env: '3' },
    database: { flag: ['postgres://db.example/meshgate'], env: 'postgres://db.example/meshgate' },
    'node-key-file': { flag: ['/etc/meshgate/node.key'], env: '/etc/meshgate/node.key' },
  };
  for (const setting of SERVE_SETTINGS.filter((s) => s.flag && s.env[0] && s.env[0] in ENV_NAMES)) {
    const sample = samples[setting.flag as string];
    assert.ok(sample, `a sample for --${setting.flag}`);
    const raw = configFlagOptions[setting.flag as string]?.multiple ? sample.flag : sample.flag[0];
    const viaFlag = loadConfig({ env: {}, overrides: configFromFlags({ [setting.flag as string]: raw }) });
    const viaEnv = loadConfig({ env: { [setting.env[0] as string]: sample.env } });
    assert.deepEqual(viaFlag, viaEnv, `--${setting.flag} and ${setting.env[0]}`);
  }
});

test('a config flag without its value is a usage error naming the flag', () => {
  assert.throws(
    () => configFromFlags({ 'https-port': true }),
    (error: Error) => error instanceof UsageError && error.message === '--https-port needs a value',
  );
  assert.throws(() => configFromFlags({ hostname: ['a.example', true] }), /--hostname needs a value/);
  assert.throws(() => configFromFlags({ 'data-dir': '--bind' }), /--data-dir needs a value/, 'a flag is no value');
});
