/**
 * Authz benchmark: warm checks/s and latency percentiles
 * with 1M tuples across 10k users and 100k objects, and list filtering for a
 * user who sees 10k datasets. The peer measured in the same run is a direct
 * probe of the database over the same table and index (what a check cost before the
 * in-memory index). With `--engine sqlite,postgres` the same tuples are seeded
 * into each engine in turn (SQLite in a temp file, as a gateway opens it, and a
 * throwaway PostgreSQL, bench/engines.ts) once; then each rep measures each
 * engine in a fresh child process (in rotating order), which builds the index from
 * its database: in one process the engine measured second ran 2-4x slower, its
 * JIT state shaped by the first. PostgreSQL/SQLite ratios are printed per rep.
 * Never run by the test suite.
 *
 *   node --expose-gc --import tsx bench/authz/run.ts [--scale 0.1] [--seconds 2] [--engine sqlite,postgres] [--reps 1]
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SATISFIED_BY } from '../../domains/authz/model.ts';
import { AuthzService } from '../../domains/authz/service.ts';
import { createTupleStore } from '../../domains/authz/store.ts';
import type { DatabaseEngine, SqlConnection } from '../../gateway/db/connection.ts';
import { openConfiguredDatabase, openDatabase } from '../../gateway/db/open.ts';
import { DEFAULT_TENANT, type Principal } from '../../gateway/principal.ts';
import { localPrincipal } from '../../test/helpers/deployments.ts';
import { type BenchPostgres, parseEngines, postgresIfNeeded } from '../engines.ts';
import { benchContext, runBench } from '../harness.ts';

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '2' },
    engine: { type: 'string', default: 'sqlite' },
    reps: { type: 'string', default: '1' },
  },
});
const engines = parseEngines(values.engine);
const scale = Number(values.scale);
const seconds = Number(values.seconds);
const USERS = Math.round(10_000 * scale);
const OBJECTS = Math.round(100_000 * scale);
const PER_USER = 100;
const LIST_OBJECTS = Math.round(10_000 * scale);
const RELATIONS = ['owner', 'editor', 'viewer'];
const QUERIES = 100_000;
/** Probing the database costs a round trip a check on PostgreSQL: the probe runs over the first of the queries. */
const PROBE_QUERIES = 10_000;
/** Rows per INSERT while seeding: 7 parameters a row stays under both engines' parameter limits. */
const SEED_BATCH = 1000;

// Deterministic PRNG (mulberry32) so runs are comparable; reset before each engine, so each holds the same tuples.
const SEED = 0x5eed;
let seed = SEED;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (n: number) => Math.floor(random() * n);
const userId = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
const objectId = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:file,bench/ds-${i},PROD)`;

type Row = [subjectId: string, relation: string, objectId: string];

function* tupleRows(): Generator<Row> {
  for (let u = 0; u < USERS; u++)
    for (let k = 0; k < PER_USER; k++) yield [userId(u), RELATIONS[pick(3)] as string, objectId(pick(OBJECTS))];
  for (let o = 0; o < LIST_OBJECTS; o++) yield ['lister', 'viewer', objectId(o)];
}

function seedTuples(sql: SqlConnection): void {
  const insertBatch = (n: number) =>
    sql.prepare(
      'INSERT INTO authz_tuples (subject_ns, subject_id, relation, object_ns, object_id, tenant, created_at) VALUES ' +
        Array.from({ length: n }, () => "('user', ?, ?, 'dataset', ?, ?, '2026-01-01T00:00:00Z')").join(', ') +
        ' ON CONFLICT DO NOTHING',
    );
  const full = insertBatch(SEED_BATCH);
  let batch: unknown[] = [];
  const flush = () => {
    if (batch.length > 0) (batch.length === SEED_BATCH * 4 ? full : insertBatch(batch.length / 4)).run(batch);
    batch = [];
  };
  seed = SEED;
  sql.transaction(() => {
    for (const row of tupleRows()) {
      batch.push(...row, DEFAULT_TENANT);
      if (batch.length === SEED_BATCH * 4) flush();
    }
    flush();
  })();
}

/** An evenly spread sample of the stored (user, object) pairs: the seeded rows generated again, not read back. */
function storedSample(samples: number): Row[] {
  seed = SEED;
  const every = Math.max(1, Math.floor((USERS * PER_USER) / samples));
  const sampled: Row[] = [];
  let i = 0;
  for (const row of tupleRows())
    if (row[0] !== 'lister' && i++ % every === 0 && sampled.length < samples) sampled.push(row);
  return sampled;
}

interface Query {
  principal: Principal;
  object: { namespace: string; id: string };
}

/** Half the queries name a stored (user, object) pair, half a random one (mostly misses); the same for each engine. */
function queries(stored: readonly Row[], n: number): Query[] {
  const principals = new Map<string, Principal>();
  const p = (id: string) => principals.get(id) ?? principals.set(id, localPrincipal(id)).get(id)!;
  const out = stored.map(([s, , o]) => ({ principal: p(s), object: { namespace: 'dataset', id: o } }));
  while (out.length < n)
    out.push({ principal: p(userId(pick(USERS))), object: { namespace: 'dataset', id: objectId(pick(OBJECTS)) } });
  return out.sort(() => random() - 0.5);
}

function throughput(run: (q: Query) => boolean, qs: Query[]): { perSecond: number; allowed: number } {
  let allowed = 0;
  for (const q of qs) if (run(q)) allowed++; // warm-up pass
  allowed = 0;
  let done = 0;
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(seconds * 1e9));
  while (process.hrtime.bigint() - start < budget) {
    for (const q of qs) if (run(q)) allowed++;
    done += qs.length;
  }
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  return { perSecond: done / elapsed, allowed: allowed / done };
}

/** Per-check latency; each sample includes one hrtime call (~40 ns on this machine class). */
function latency(run: (q: Query) => boolean, qs: Query[]): { p50: number; p99: number; p999: number; max: number } {
  const samples = new Float64Array(qs.length);
  qs.forEach((q, i) => {
    const t0 = process.hrtime.bigint();
    run(q);
    samples[i] = Number(process.hrtime.bigint() - t0) / 1000;
  });
  samples.sort();
  const at = (p: number) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))] as number;
  return { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: samples[samples.length - 1] as number };
}

function median(n: number, fn: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(n / 2)] as number;
}

const fmt = (n: number, digits = 2) => n.toFixed(digits);

interface EngineFigures {
  checksPerSecond: number;
  checkP99: number;
  probePerSecond: number;
  probeP99: number;
  listIndexMs: number;
  buildSeconds: number;
}

/** Where an engine's seeded database is: a file for SQLite, a URL for PostgreSQL (in the environment: no `ps`). */
const CHILD_ENGINE = 'BENCH_AUTHZ_ENGINE';
const CHILD_DATABASE = 'BENCH_AUTHZ_DATABASE';

async function openAt(engine: DatabaseEngine, location: string): Promise<SqlConnection> {
  if (engine === 'postgres') return (await openConfiguredDatabase({ dataDir: '', database: location })).sql;
  return openDatabase(location).sqlite;
}

/** A new database of the engine, migrated and seeded: a temp file for SQLite, a new database for PostgreSQL. */
async function seeded(engine: DatabaseEngine, postgres: BenchPostgres | null): Promise<string> {
  let location: string;
  if (engine === 'postgres' && postgres) location = await postgres.freshDatabase();
  else {
    const dir = mkdtempSync(join(tmpdir(), 'bench-authz-'));
    benchContext.after(() => rmSync(dir, { recursive: true, force: true }));
    location = join(dir, 'meshgate.db');
  }
  const sql = await openAt(engine, location);
  const t0 = process.hrtime.bigint();
  seedTuples(sql);
  const tuples = Number(sql.prepare('SELECT count(*) AS n FROM authz_tuples').pluck().get());
  console.log(
    `[${engine}] seeded ${tuples} tuples (${USERS} users x ${PER_USER}, ${OBJECTS} objects, ` +
      `+${LIST_OBJECTS} for the lister) in ${fmt(Number(process.hrtime.bigint() - t0) / 1e9)} s`,
  );
  sql.close();
  return location;
}

/** In the child: builds the index from the seeded database and measures it and the database's probe. */
async function measure(engine: DatabaseEngine, location: string): Promise<EngineFigures> {
  const sql = await openAt(engine, location);
  const stored = storedSample(QUERIES / 2);
  let t0 = process.hrtime.bigint();
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  t0 = process.hrtime.bigint();
  const authz = new AuthzService(createTupleStore(sql), () => new Date());
  const buildSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  gc();
  const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  console.log(`[${engine}] index built from the database in ${fmt(buildSeconds)} s, heap +${fmt(heapMb, 0)} MiB`);

  const viewer = SATISFIED_BY.get('dataset')?.get('viewer') as readonly string[];
  const probe = sql.prepare(
    `SELECT 1 FROM authz_tuples WHERE subject_ns = 'user' AND subject_id = ` +
      `? AND object_ns = ? AND object_id = ? AND tenant = ? AND ` +
      `relation IN (${viewer.map(() => '?').join(',')}) LIMIT 1`,
  );
  const viaIndex = (q: Query) => authz.check(q.principal, 'viewer', q.object);
  const viaDatabase = (q: Query) =>
    probe.get(q.principal.userId, q.object.namespace, q.object.id, DEFAULT_TENANT, ...viewer) !== undefined;

  const qs = queries(stored, QUERIES);
  const probed = qs.slice(0, PROBE_QUERIES);
  const mismatch = probed.filter((q) => viaIndex(q) !== viaDatabase(q)).length;
  if (mismatch > 0) throw new Error(`index and ${engine} disagree on ${mismatch} checks`);

  const idx = throughput(viaIndex, qs);
  const db = throughput(viaDatabase, probed);
  const idxLat = latency(viaIndex, qs);
  const dbLat = latency(viaDatabase, probed);
  console.log(
    `[${engine}] check (index):  ${fmt(idx.perSecond / 1000, 0)}k checks/s, allowed ${fmt(idx.allowed * 100, 0)}%, ` +
      `p50 ${fmt(idxLat.p50)} µs, p99 ${fmt(idxLat.p99)} µs, p99.9 ${fmt(idxLat.p999)} µs`,
  );
  console.log(
    `[${engine}] check (probe):  ${fmt(db.perSecond / 1000, 1)}k checks/s, ` +
      `p50 ${fmt(dbLat.p50)} µs, p99 ${fmt(dbLat.p99)} µs, p99.9 ${fmt(dbLat.p999)} µs`,
  );
  console.log(`[${engine}] ratio index/probe: ${fmt(idx.perSecond / db.perSecond, 1)}x`);

  // List filtering: a catalog page of 10k datasets filtered to what the caller may see.
  const lister = localPrincipal('lister');
  const catalog = Array.from({ length: LIST_OBJECTS }, (_, i) => ({ urn: objectId(i) }));
  const listIndexMs = median(21, () => {
    const visible = authz.visibleIds(lister, 'dataset');
    if (visible !== 'all' && catalog.filter((d) => visible.has(d.urn)).length !== LIST_OBJECTS)
      throw new Error('list filter lost rows');
  });
  const objectIdsSql = sql.prepare(
    `SELECT DISTINCT object_id AS id FROM authz_tuples WHERE subject_ns = ` +
      `'user' AND subject_id = ? AND object_ns = 'dataset' AND tenant = ? ` +
      `AND relation IN (${viewer.map(() => '?').join(',')})`,
  );
  const listDatabaseMs = median(21, () => {
    const visible = new Set(
      (objectIdsSql.all('lister', DEFAULT_TENANT, ...viewer) as { id: string }[]).map((r) => r.id),
    );
    if (catalog.filter((d) => visible.has(d.urn)).length !== LIST_OBJECTS) throw new Error('list filter lost rows');
  });
  console.log(
    `[${engine}] list-filter ${LIST_OBJECTS} datasets: index ${fmt(listIndexMs)} ms, ` +
      `database ${fmt(listDatabaseMs)} ms (median of 21)`,
  );
  sql.close();
  return {
    checksPerSecond: idx.perSecond,
    checkP99: idxLat.p99,
    probePerSecond: db.perSecond,
    probeP99: dbLat.p99,
    listIndexMs,
    buildSeconds,
  };
}

/** One engine measured in a fresh process (its own JIT state and heap); the figures come back over IPC. */
function inChild(engine: DatabaseEngine, location: string): Promise<EngineFigures> {
  const child = fork(import.meta.filename, process.argv.slice(2), {
    execArgv: ['--expose-gc', '--import', 'tsx'],
    env: { ...process.env, [CHILD_ENGINE]: engine, [CHILD_DATABASE]: location },
  });
  return new Promise((resolve, reject) => {
    child.once('message', (figures) => resolve(figures as EngineFigures));
    child.once('exit', (code) => reject(new Error(`the ${engine} run exited with ${code}`)));
  });
}

async function main(): Promise<void> {
  const engine = process.env[CHILD_ENGINE] as DatabaseEngine | undefined;
  if (engine) {
    process.send?.(await measure(engine, process.env[CHILD_DATABASE] as string));
    return;
  }
  const postgres = await postgresIfNeeded(engines, benchContext);
  const locations = new Map<DatabaseEngine, string>();
  for (const e of engines) locations.set(e, await seeded(e, postgres));
  const ratios: Record<string, string[]> = {};
  for (let rep = 0; rep < Number(values.reps); rep++) {
    const figures = new Map<DatabaseEngine, EngineFigures>();
    const shift = rep % engines.length;
    for (const e of [...engines.slice(shift), ...engines.slice(0, shift)])
      figures.set(e, await inChild(e, locations.get(e) as string));
    const [sqlite, pg] = [figures.get('sqlite'), figures.get('postgres')];
    if (!sqlite || !pg) continue;
    const keys = Object.keys(sqlite) as (keyof EngineFigures)[];
    for (const key of keys) ratios[key] = [...(ratios[key] ?? []), fmt(pg[key] / sqlite[key])];
    console.log(`rep ${rep + 1} postgres/sqlite: ${keys.map((k) => `${k} ${fmt(pg[k] / sqlite[k])}`).join(', ')}`);
  }
  for (const [key, per] of Object.entries(ratios)) console.log(`postgres/sqlite ${key}: ${per.join(' / ')}`);
}

runBench(main);
