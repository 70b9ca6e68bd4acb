/**
 * Authz benchmark: warm checks/s and latency percentiles
 * with 1M tuples across 10k users and 100k objects, and list filtering for a
 * user who sees 10k datasets. The peer measured in the same run is a direct
 * SQLite probe over the same table and index (what a check cost before the
 * in-memory index). Never run by the test suite.
 *
 *   node --expose-gc --import tsx bench/authz/run.ts [--scale 0.1] [--seconds 2]
 */
import { parseArgs } from 'node:util';
import { SATISFIED_BY } from '../../domains/authz/model.ts';
import { AuthzService } from '../../domains/authz/service.ts';
import { createTupleStore } from '../../domains/authz/store.ts';
import { openDatabase } from '../../gateway/db/open.ts';
import { DEFAULT_TENANT, type Principal } from '../../gateway/principal.ts';
import { localPrincipal } from '../../test/helpers/deployments.ts';

const { values } = parseArgs({
  options: { scale: { type: 'string', default: '1' }, seconds: { type: 'string', default: '2' } },
});
const scale = Number(values.scale);
const seconds = Number(values.seconds);
const USERS = Math.round(10_000 * scale);
const OBJECTS = Math.round(100_000 * scale);
const PER_USER = 100;
const LIST_OBJECTS = Math.round(10_000 * scale);
const RELATIONS = ['owner', 'editor', 'viewer'];

// Deterministic PRNG (mulberry32) so runs are comparable.
let seed = 0x5eed;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (n: number) => Math.floor(random() * n);
const userId = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
const objectId = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:file,bench/ds-${i},PROD)`;

function seedTuples(sqlite: ReturnType<typeof openDatabase>['sqlite']): void {
  const insert = sqlite.prepare(
    'INSERT OR IGNORE INTO authz_tuples (subject_ns, subject_id, relation, ' +
      "object_ns, object_id, tenant, created_at) VALUES ('user', ?, ?, " +
      "'dataset', ?, ?, '2026-01-01T00:00:00Z')",
  );
  sqlite.transaction(() => {
    for (let u = 0; u < USERS; u++)
      for (let k = 0; k < PER_USER; k++)
        insert.run(userId(u), RELATIONS[pick(3)], objectId(pick(OBJECTS)), DEFAULT_TENANT);
    for (let o = 0; o < LIST_OBJECTS; o++) insert.run('lister', 'viewer', objectId(o), DEFAULT_TENANT);
  })();
}

interface Query {
  principal: Principal;
  object: { namespace: string; id: string };
}

/** Half the queries name a stored (user, object) pair, half a random one (mostly misses). */
function queries(sqlite: ReturnType<typeof openDatabase>['sqlite'], n: number): Query[] {
  const stored = sqlite
    .prepare(
      "SELECT subject_id AS s, object_id AS o FROM authz_tuples WHERE subject_id != 'lister' ORDER BY random() LIMIT ?",
    )
    .all(n / 2) as {
    s: string;
    o: string;
  }[];
  const principals = new Map<string, Principal>();
  const p = (id: string) => principals.get(id) ?? principals.set(id, localPrincipal(id)).get(id)!;
  const out = stored.map((r) => ({ principal: p(r.s), object: { namespace: 'dataset', id: r.o } }));
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

function main(): void {
  const { sqlite } = openDatabase(':memory:');
  let t0 = process.hrtime.bigint();
  seedTuples(sqlite);
  const tuples = (sqlite.prepare('SELECT count(*) AS n FROM authz_tuples').get() as { n: number }).n;
  console.log(
    `seeded ${tuples} tuples (${USERS} users ` +
      `x ${PER_USER}, ${OBJECTS} objects, +${LIST_OBJECTS} for the ` +
      `lister) ` +
      `in ${fmt(Number(process.hrtime.bigint() - t0) / 1e9)} s`,
  );

  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  t0 = process.hrtime.bigint();
  const authz = new AuthzService(createTupleStore(sqlite), () => new Date());
  const loadSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  gc();
  const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  console.log(`index built from SQLite in ${fmt(loadSeconds)} s, heap +${fmt(heapMb, 0)} MiB`);

  const viewer = SATISFIED_BY.get('dataset')?.get('viewer') as readonly string[];
  const probe = sqlite.prepare(
    `SELECT 1 FROM authz_tuples WHERE subject_ns = 'user' AND subject_id = ` +
      `? AND object_ns = ? AND object_id = ? AND tenant = ? AND ` +
      `relation IN (${viewer.map(() => '?').join(',')}) LIMIT 1`,
  );
  const viaIndex = (q: Query) => authz.check(q.principal, 'viewer', q.object);
  const viaSqlite = (q: Query) =>
    probe.get(q.principal.userId, q.object.namespace, q.object.id, DEFAULT_TENANT, ...viewer) !== undefined;

  const qs = queries(sqlite, 100_000);
  const mismatch = qs.filter((q) => viaIndex(q) !== viaSqlite(q)).length;
  if (mismatch > 0) throw new Error(`index and SQLite disagree on ${mismatch} checks`);

  const idx = throughput(viaIndex, qs);
  const sql = throughput(viaSqlite, qs);
  const idxLat = latency(viaIndex, qs);
  const sqlLat = latency(viaSqlite, qs);
  console.log(
    `check (index):  ${fmt(idx.perSecond / 1000, 0)}k checks/s, ` +
      `allowed ${fmt(idx.allowed * 100, 0)}%, ` +
      `p50 ${fmt(idxLat.p50)} µs, p99 ${fmt(idxLat.p99)} µs, ` +
      `p99.9 ${fmt(idxLat.p999)} µs`,
  );
  console.log(
    `check (sqlite): ${fmt(sql.perSecond / 1000, 0)}k checks/s, ` +
      `p50 ${fmt(sqlLat.p50)} µs, p99 ${fmt(sqlLat.p99)} µs, ` +
      `p99.9 ${fmt(sqlLat.p999)} µs`,
  );
  console.log(`ratio index/sqlite: ${fmt(idx.perSecond / sql.perSecond, 1)}x`);

  // List filtering: a catalog page of 10k datasets filtered to what the caller may see.
  const lister = localPrincipal('lister');
  const catalog = Array.from({ length: LIST_OBJECTS }, (_, i) => ({ urn: objectId(i) }));
  const listIndex = median(21, () => {
    const visible = authz.visibleIds(lister, 'dataset');
    if (visible !== 'all' && catalog.filter((d) => visible.has(d.urn)).length !== LIST_OBJECTS)
      throw new Error('list filter lost rows');
  });
  const objectIdsSql = sqlite.prepare(
    `SELECT DISTINCT object_id AS id FROM authz_tuples WHERE subject_ns = ` +
      `'user' AND subject_id = ? AND object_ns = 'dataset' AND tenant = ? ` +
      `AND relation IN (${viewer.map(() => '?').join(',')})`,
  );
  const listSql = median(21, () => {
    const visible = new Set(
      (objectIdsSql.all('lister', DEFAULT_TENANT, ...viewer) as { id: string }[]).map((r) => r.id),
    );
    if (catalog.filter((d) => visible.has(d.urn)).length !== LIST_OBJECTS) throw new Error('list filter lost rows');
  });
  console.log(
    `list-filter ${LIST_OBJECTS} datasets: index ${fmt(listIndex)} ms, sqlite ${fmt(listSql)} ms (median of 21)`,
  );
  sqlite.close();
}

main();
