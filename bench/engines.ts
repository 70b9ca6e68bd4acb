/**
 * The database engines a benchmark can run meshgate on, picked with `--engine sqlite,postgres`, and the throwaway
 * PostgreSQL cluster the PostgreSQL runs use: the test peer (test/helpers/peers/postgres.ts) on loopback, with
 * durability turned back on (fsync, synchronous commit, full-page writes), because the SQLite engine commits with
 * `synchronous = FULL` and a write figure against an unsynced PostgreSQL would compare different promises.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseEngine } from '../gateway/db/connection.ts';
import type { After } from '../test/helpers/gateway.ts';
import { type PostgresPeer, startPostgres } from '../test/helpers/peers/postgres.ts';

export const ENGINES: readonly DatabaseEngine[] = ['sqlite', 'postgres'];

/** `--engine sqlite,postgres` → the engines in the order given; an unknown name stops the run. */
export function parseEngines(list: string): DatabaseEngine[] {
  const engines = list.split(',').map((name) => name.trim());
  for (const name of engines)
    if (!ENGINES.includes(name as DatabaseEngine)) throw new Error(`--engine: ${name} is not one of ${ENGINES}`);
  return engines as DatabaseEngine[];
}

export interface BenchPostgres {
  peer: PostgresPeer;
  /** The file of the node key every meshgate on PostgreSQL needs (32 random bytes, base64, 0600). */
  nodeKeyFile: string;
  /** A new, empty database on the cluster: one per gateway, so no run sees another's rows. */
  freshDatabase(): Promise<string>;
}

export async function startBenchPostgres(t: After): Promise<BenchPostgres> {
  const peer = await startPostgres(t, {
    settings: { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on', shared_buffers: '128MB' },
  });
  const dir = mkdtempSync(join(tmpdir(), 'bench-node-key-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const nodeKeyFile = join(dir, 'node.key');
  writeFileSync(nodeKeyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
  return {
    peer,
    nodeKeyFile,
    async freshDatabase() {
      const name = `bench_${randomBytes(6).toString('hex')}`;
      await peer.psql(`CREATE DATABASE ${name}`);
      return peer.url.replace(/\/postgres$/, `/${name}`);
    },
  };
}

/**
 * `meshgate serve` settings for an engine: none for SQLite (its data dir); a fresh database and the node key for
 * PostgreSQL, in the environment, where `ps` does not show the URL's password as it would a flag.
 */
export async function serveEnv(
  engine: DatabaseEngine,
  postgres: BenchPostgres | null,
): Promise<Record<string, string>> {
  if (engine === 'sqlite') return {};
  if (!postgres) throw new Error('a PostgreSQL run needs the bench cluster');
  return { PLATFORM_DATABASE_URL: await postgres.freshDatabase(), PLATFORM_NODE_KEY_FILE: postgres.nodeKeyFile };
}

/** Starts the cluster only when a PostgreSQL run was asked for. */
export async function postgresIfNeeded(engines: readonly DatabaseEngine[], t: After): Promise<BenchPostgres | null> {
  return engines.includes('postgres') ? startBenchPostgres(t) : null;
}
