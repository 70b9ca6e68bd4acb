/**
 * Which database engine the gateways of a test run use: SQLite (the default) or, with
 * MESHGATE_TEST_DATABASE=postgres, one PostgreSQL cluster per test process with a fresh database per gateway —
 * how scripts/test.sh runs the domain suites a second time, so every store is checked against both engines.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { ConfigInput } from '../../gateway/config/schema.ts';
import type { DatabaseEngine, SqlConnection } from '../../gateway/db/connection.ts';
import { type OpenedDatabase, openConfiguredDatabase, openDatabase } from '../../gateway/db/open.ts';
import { type After, startTestGateway, type TestGateway } from './gateway.ts';
import { type PostgresPeer, startPostgres } from './peers/postgres.ts';

export const TEST_ENGINE: DatabaseEngine = process.env.MESHGATE_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite';

const lastHooks: (() => unknown)[] = [];
/** The cluster lives as long as the test process: stopped after its last test. */
const processLifetime: After = { after: (hook) => void lastHooks.push(hook) };
after(async () => {
  for (const hook of lastHooks.splice(0).reverse()) await hook();
});

let cluster: Promise<PostgresPeer> | null = null;

/** The process's PostgreSQL cluster, started on first use (its binaries: pg_dump, ...). */
export function testPostgres(): Promise<PostgresPeer> {
  cluster ??= startPostgres(processLifetime, { settings: { max_connections: '300' } });
  return cluster;
}

/** A new, empty database on the process's PostgreSQL cluster. */
export async function freshPostgresDatabase(): Promise<string> {
  const peer = await testPostgres();
  const name = `meshgate_${randomBytes(6).toString('hex')}`;
  await peer.psql(`CREATE DATABASE ${name}`);
  return peer.url.replace(/\/postgres$/, `/${name}`);
}

/** The PostgreSQL database of each test gateway's data dir, so a CLI command given the data dir finds it too. */
const databaseOfDataDir = new Map<string, string>();

let nodeKeyFile: string | null = null;

/** One node key for the test process's clusters (every node of a cluster shares it), 0600, deleted at the end. */
export function testNodeKeyFile(): string {
  if (nodeKeyFile === null) {
    const dir = mkdtempSync(join(tmpdir(), 'meshgate-node-key-'));
    nodeKeyFile = join(dir, 'node.key');
    writeFileSync(nodeKeyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
    lastHooks.push(() => rmSync(dir, { recursive: true, force: true }));
  }
  return nodeKeyFile;
}

/** The database settings of a new test gateway: none (SQLite in its data dir) unless the run is on PostgreSQL. */
export async function testDatabaseSettings(dataDir: string): Promise<{ database?: string; nodeKeyFile?: string }> {
  if (TEST_ENGINE !== 'postgres') return {};
  const url = await freshPostgresDatabase();
  databaseOfDataDir.set(dataDir, url);
  return { database: url, nodeKeyFile: testNodeKeyFile() };
}

/** A CLI command's arguments with `--database` added when its `--data-dir` is a test gateway's on PostgreSQL. */
export function withTestDatabase(args: readonly string[]): string[] {
  const at = args.indexOf('--data-dir');
  const url = at >= 0 ? databaseOfDataDir.get(args[at + 1] as string) : undefined;
  if (url === undefined || args.includes('--database')) return [...args];
  return [...args, '--database', url, '--node-key-file', testNodeKeyFile()];
}

/** A database of the given engine for a store or feed test, closed after it: in-memory SQLite, or a fresh one. */
export async function openTestDatabase(
  t: After,
  engine: DatabaseEngine = TEST_ENGINE,
): Promise<OpenedDatabase & { url: string | null }> {
  const url = engine === 'postgres' ? await freshPostgresDatabase() : null;
  const opened = url === null ? openInMemory() : await openConfiguredDatabase({ dataDir: '', database: url });
  t.after(() => opened.sql.close());
  return { ...opened, url };
}

function openInMemory(): OpenedDatabase {
  const { sqlite, db } = openDatabase(':memory:');
  return { engine: 'sqlite', sql: sqlite, db };
}

/** Two connections to one new database of the test engine: what two gateway processes, or two nodes, hold. */
export async function openTwoConnections(t: After): Promise<[SqlConnection, SqlConnection]> {
  if (TEST_ENGINE === 'postgres') {
    const url = await freshPostgresDatabase();
    const open = async () => (await openConfiguredDatabase({ dataDir: '', database: url })).sql;
    const pair: [SqlConnection, SqlConnection] = [await open(), await open()];
    t.after(() => {
      for (const sql of pair) sql.close();
    });
    return pair;
  }
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-db-'));
  const pair: [SqlConnection, SqlConnection] = [
    openDatabase(join(dir, 'two.db')).sqlite,
    openDatabase(join(dir, 'two.db')).sqlite,
  ];
  t.after(() => {
    for (const sql of pair) sql.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return pair;
}

/**
 * Two nodes of one cluster in this process: test gateways with their own data dirs on one fresh PostgreSQL database
 * and one node key, with fast heartbeats (a node silent for 1.5 s is dead).
 */
export async function startTwoNodes(t: After, overrides: ConfigInput = {}): Promise<[TestGateway, TestGateway]> {
  const shared: ConfigInput = {
    database: await freshPostgresDatabase(),
    nodeKeyFile: testNodeKeyFile(),
    nodes: { heartbeatMs: 100, deadAfterMs: 1500 },
    ...overrides,
  };
  return [await startTestGateway(t, shared), await startTestGateway(t, shared)];
}
