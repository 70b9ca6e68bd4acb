/**
 * `meshgate backup <dir>` and `meshgate restore <dir> [--force]` (formats and
 * guarantees in app/backup/). Both print what the operator must still do
 * about the key-encryption keys, which no backup holds.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { UsageError } from '../../gateway/cli/usage.ts';
import type { CliCommand, CliEnv } from '../../gateway/module.ts';
import { createBackup } from '../backup/create.ts';
import { restoreBackup } from '../backup/restore.ts';

/** The one positional argument both commands take. */
function folderArgument(args: string[], options: { force?: { type: 'boolean' } } = {}) {
  const { values, positionals } = parseArgs({ args, options, allowPositionals: true });
  if (positionals.length === 0) throw new UsageError('missing the backup folder');
  if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
  return { folder: positionals[0] as string, force: values.force === true };
}

/**
 * The commands copy a SQLite data dir. On PostgreSQL the state, the sealed cluster identity included, is in the
 * database, which PostgreSQL's own tools back up consistently (pg_dump, or base backups with WAL archiving).
 */
function onPostgres(env: CliEnv, command: string): number | null {
  if (env.config.database === null) return null;
  env.err(
    `meshgate ${command}: this gateway keeps its state in PostgreSQL: back it up with pg_dump (or your base ` +
      'backups) and keep the node key file apart from it; see docs/operating.md, "Several nodes"',
  );
  return 1;
}

/** A refusal: the reason on stderr, exit status 1, nothing changed. */
function refused(env: CliEnv, command: string, error: unknown): number {
  if (!(error instanceof Error) || error instanceof UsageError) throw error;
  env.err(`meshgate ${command}: ${error.message}`);
  return 1;
}

export const backupCommand: CliCommand = {
  name: 'backup',
  summary: 'copy the data dir (database, keys, TLS) into a new backup folder, while the gateway serves',
  usage: `meshgate backup <new folder>

Writes a consistent copy of the data dir into <new folder> (created 0700, files 0600; refuses an existing one):
the database as of the backup's start (SQLite online backup), keys/, tls/, the issuer file and the rest of
the data dir, and MANIFEST.json with every file's SHA-256. Job workspaces are left out, and so are the
key-encryption keys (secrets.kekDir): the backup names the KEK files its secrets need; keep them apart.`,
  async run(args, env) {
    const { folder } = folderArgument(args);
    const refusal = onPostgres(env, 'backup');
    if (refusal !== null) return refusal;
    try {
      const { manifest, skipped } = await createBackup(env.config, folder);
      const database = manifest.files[0];
      env.out(`meshgate backup ${folder}: ${manifest.files.length} files, database ${database?.bytes} bytes`);
      for (const path of skipped) env.err(`skipped ${path}: neither a file nor a folder`);
      const files = manifest.kek.files.join(', ') || 'none';
      env.out(`not included: the key-encryption keys. Its secrets need ${files} from ${manifest.kek.dir}`);
      return 0;
    } catch (error) {
      return refused(env, 'backup', error);
    }
  },
};

export const restoreCommand: CliCommand = {
  name: 'restore',
  summary: 'restore a backup folder into a data dir that no gateway is serving',
  usage: `meshgate restore <backup folder> [--force]

Verifies the backup (every file against MANIFEST.json, SQLite's integrity check, a schema this build knows)
before it writes anything, then restores it into the data dir (--data-dir). Refuses while a gateway serves
that data dir, and refuses a non-empty data dir unless --force (which replaces everything in it except the
KEK folder). Ends by listing the KEK files the restored secrets need and whether secrets.kekDir holds them.`,
  async run(args, env) {
    const { folder, force } = folderArgument(args, { force: { type: 'boolean' } });
    const refusal = onPostgres(env, 'restore');
    if (refusal !== null) return refusal;
    try {
      const { manifest, kekDir, kek } = restoreBackup(env.config, folder, { force });
      const what = `${manifest.files.length} files into ${env.config.dataDir}`;
      env.out(`meshgate restore ${folder}: ${what} (backup of ${manifest.createdAt})`);
      for (const key of kek) env.out(`KEK ${join(kekDir, key.file)}: ${key.state}`);
      if (kek.some((key) => key.state !== 'ok')) {
        env.err(`before start, put the KEK files the restored secrets need into ${kekDir} (mode 0600)`);
      }
      return 0;
    } catch (error) {
      return refused(env, 'restore', error);
    }
  },
};
