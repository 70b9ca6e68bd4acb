/**
 * bench/writes: write latency on each database engine, in one run. Two meshgates as shipped (`bin/meshgate serve`,
 * bench/proxy/meshgate.ts), one on SQLite in its data dir and one on a throwaway PostgreSQL with durable commits
 * (bench/engines.ts), take, through the real API over loopback:
 *   - tuple writes: `POST /api/auth/tuples` (one tuple a request);
 *   - dataset writes: `POST /api/catalog/datasets/` (the dataset row, its secret bindings and its owner tuple in one
 *     transaction);
 * first `--writes` sequential requests, then `--clients` concurrent clients sharing `--writes` requests. Then the
 * raw store calls in this process, on a database of each engine opened as a gateway opens it: the tuple store's
 * write and a dataset row with its owner tuple in one transaction. Each phase is bounded by `--writes` and by
 * `--phase-seconds`; reps rotate which engine goes first; every figure is p50/p99 in ms with PostgreSQL/SQLite.
 * Never run by the test suite.
 *
 *   npx tsx bench/writes/run.ts [--engine sqlite,postgres] [--writes 300] [--clients 4] [--reps 3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { createTupleStore } from '../../domains/authz/store.ts';
import { createDatasetStore, type DatasetRow } from '../../domains/catalog/datasets-store.ts';
import type { DatabaseEngine } from '../../gateway/db/connection.ts';
import { type OpenedDatabase, openConfiguredDatabase, openDatabase } from '../../gateway/db/open.ts';
import { DEFAULT_TENANT } from '../../gateway/principal.ts';
import { type BenchPostgres, parseEngines, postgresIfNeeded, serveEnv } from '../engines.ts';
import { type Meshgate, startMeshgate } from '../proxy/meshgate.ts';
import { child, freePort, runBench } from '../proxy/peers.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'sqlite,postgres' },
    writes: { type: 'string', default: '300' },
    clients: { type: 'string', default: '4' },
    reps: { type: 'string', default: '3' },
    'phase-seconds': { type: 'string', default: '60' },
  },
});
const engines = parseEngines(values.engine);
const WRITES = Number(values.writes);
const CLIENTS = Number(values.clients);
const PHASE_MS = Number(values['phase-seconds']) * 1000;
const stops: (() => unknown)[] = [];
const after = { after: (stop: () => unknown) => void stops.push(stop) };

/** One write; `i` makes its tuple or dataset new. */
type Write = (i: number) => Promise<void> | void;
type Writes = Record<'tuple' | 'dataset', Write>;
interface Latency {
  p50: number;
  p99: number;
  n: number;
}

function percentiles(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
  return { p50: round(at(0.5)), p99: round(at(0.99)), n: sorted.length };
}

const round = (x: number) => Number(x.toFixed(3));

/** `clients` loops sharing `WRITES` writes, each timed alone; stops early at the phase's time bound. */
async function timed(write: Write, clients: number, from: number): Promise<Latency> {
  const samples: number[] = [];
  const deadline = performance.now() + PHASE_MS;
  let next = 0;
  const loop = async () => {
    while (next < WRITES && performance.now() < deadline) {
      const i = from + next++;
      const t0 = performance.now();
      await write(i);
      samples.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: clients }, loop));
  return percentiles(samples);
}

/** The two API writes against one gateway, over one keep-alive connection per client. */
function apiWrites(gateway: Meshgate, agent: Agent): Writes {
  const post = async (path: string, body: unknown, expected: number) => {
    const res = await request(`${gateway.base}${path}`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${gateway.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode !== expected) throw new Error(`POST ${path} answered ${res.statusCode}: ${text}`);
  };
  return {
    tuple: (i) =>
      post(
        '/api/auth/tuples',
        {
          subject: { namespace: 'user', id: `bench-user-${i % 97}` },
          relation: 'viewer',
          object: { namespace: 'dataset', id: `urn:li:dataset:(urn:li:dataPlatform:file,bench/t-${i},PROD)` },
        },
        204,
      ),
    dataset: (i) =>
      post('/api/catalog/datasets/', { name: `bench/d-${i}`, platform: 'file', properties: { path: `/d/${i}` } }, 201),
  };
}

/** The same two writes as raw store calls in this process, on a database opened as a gateway opens it. */
function storeWrites(opened: OpenedDatabase): Writes {
  const tuples = createTupleStore(opened.sql);
  const datasets = createDatasetStore(opened.db);
  const tuple = (objectId: string, relation: string) => ({
    subjectNs: 'user',
    subjectId: 'bench-user',
    relation,
    objectNs: 'dataset',
    objectId,
    tenant: DEFAULT_TENANT,
  });
  return {
    tuple: (i) => void tuples.write([tuple(`urn:bench:t-${i}`, 'viewer')], new Date().toISOString()),
    dataset: (i) => {
      const at = new Date().toISOString();
      const row: DatasetRow = {
        urn: `urn:li:dataset:(urn:li:dataPlatform:file,bench/d-${i},PROD)`,
        name: `bench/d-${i}`,
        platform: 'file',
        environment: 'PROD',
        description: null,
        tags: [],
        properties: { path: `/d/${i}` },
        datasetSchema: null,
        containerUrn: null,
        writable: false,
        storage: null,
        contentRevision: 0,
        createdBy: 'bench-user',
        createdAt: at,
        updatedAt: at,
      };
      datasets.atomically(() => {
        datasets.insert(row);
        tuples.write([tuple(row.urn, 'owner')], at);
      });
    },
  };
}

async function openStore(engine: DatabaseEngine, postgres: BenchPostgres | null): Promise<OpenedDatabase> {
  if (engine === 'postgres' && postgres)
    return openConfiguredDatabase({ dataDir: '', database: await postgres.freshDatabase() });
  const dir = mkdtempSync(join(tmpdir(), 'bench-writes-'));
  stops.push(() => rmSync(dir, { recursive: true, force: true }));
  const { sqlite, db } = openDatabase(join(dir, 'meshgate.db'));
  return { engine: 'sqlite', sql: sqlite, db };
}

type Figures = Record<string, Latency>;

/** Every phase of one engine for one rep; `from` keeps each rep's tuples and datasets new. */
async function measure(api: Writes, store: Writes, from: number) {
  const figures: Figures = {};
  for (const kind of ['tuple', 'dataset'] as const) {
    figures[`api ${kind}, sequential`] = await timed(api[kind], 1, from);
    figures[`api ${kind}, ${CLIENTS} clients`] = await timed(api[kind], CLIENTS, from + WRITES);
    figures[`store ${kind}`] = await timed(store[kind], 1, from);
  }
  return figures;
}

async function main(): Promise<void> {
  const upstream = await child<{ port: number }>('upstream.ts', []);
  const postgres = await postgresIfNeeded(engines, after);
  const targets = new Map<DatabaseEngine, { api: Writes; store: Writes }>();
  for (const engine of engines) {
    const upstreamUrl = `http://127.0.0.1:${upstream.hello.port}`;
    const gateway = await startMeshgate(upstreamUrl, await freePort(), [], await serveEnv(engine, postgres));
    stops.push(gateway.stop);
    const agent = new Agent({ connections: CLIENTS });
    stops.push(() => agent.close());
    const opened = await openStore(engine, postgres);
    stops.push(() => opened.sql.close());
    targets.set(engine, { api: apiWrites(gateway, agent), store: storeWrites(opened) });
  }
  // Warm-up: JIT, the token cache, prepared statements; not counted.
  for (const { api, store } of targets.values())
    for (const kind of ['tuple', 'dataset'] as const)
      for (let i = 0; i < 20; i++) await Promise.all([api[kind](-1 - i), store[kind](-1 - i)]);
  const reps = Number(values.reps);
  for (let rep = 0; rep < reps; rep++) {
    const shift = rep % engines.length;
    const byEngine = new Map<DatabaseEngine, Figures>();
    for (const engine of [...engines.slice(shift), ...engines.slice(0, shift)]) {
      const { api, store } = targets.get(engine) as { api: Writes; store: Writes };
      byEngine.set(engine, await measure(api, store, (rep + 1) * 10 * WRITES));
    }
    report(rep + 1, byEngine);
  }
}

function report(rep: number, byEngine: Map<DatabaseEngine, Figures>): void {
  const [sqlite, postgres] = [byEngine.get('sqlite'), byEngine.get('postgres')];
  for (const phase of Object.keys(sqlite ?? postgres ?? {})) {
    const cell = (f: Figures | undefined) =>
      f?.[phase] ? `${f[phase].p50} / ${f[phase].p99} ms (${f[phase].n})` : '—';
    const s = sqlite?.[phase];
    const p = postgres?.[phase];
    const ratio = s && p ? `  pg/sqlite p50 ${(p.p50 / s.p50).toFixed(2)}, p99 ${(p.p99 / s.p99).toFixed(2)}` : '';
    console.log(`rep ${rep} ${phase.padEnd(24)} sqlite ${cell(sqlite)}  postgres ${cell(postgres)}${ratio}`);
  }
}

runBench(main, stops);
