/**
 * A table in Arrow through the gateway beside the direct readers, in one
 * run: `psql COPY … TO STDOUT` (what one PostgreSQL backend can produce),
 * Apache Arrow's ADBC PostgreSQL driver and ConnectorX reading the table
 * straight into a pyarrow Table (bench/retrieval/direct_client.py,
 * scripts/peers/adbc.sh), ConnectorX split on `id` into as many partitions
 * as the gateway's endpoints, and the gateway: one Arrow Flight DoGet
 * (pyarrow `read_all()`), the Flight parallel read (GetFlightInfo, every
 * endpoint read at once, a thread each), SSE (undici) and
 * platform.retrieval.v1 (Python grpcio). Each size's targets are read `reps`
 * times, the order rotated every round. Prints per target the median and
 * best wall time, rows/s, the ratio to ADBC, and the CPU seconds per million
 * rows of the gateway, of the client and of PostgreSQL (the postmaster's
 * tree), and the gateway's RSS growth (its highest RSS during the
 * target's reads over its RSS before the size's first read).
 * BENCH_BASELINE (another checkout's bin/meshgate, e.g. main's) adds that
 * gateway's single Flight read to every round: the A/B an optimisation is
 * kept by. Never run by the test suite.
 *
 *   npx tsx bench/retrieval/peers.ts [sizes=3000000,10000000] [reps=3]
 *
 * The gateway reads PLATFORM_RETRIEVAL_FLIGHT_ENDPOINTS_MAX from the environment (4 by default).
 */
import { request } from 'undici';
import { flightGet, startFlightClient } from '../../test/helpers/flight.ts';
import { startGrpcioClient } from '../../test/helpers/grpcio.ts';
import { startLineClient } from '../../test/helpers/line-client.ts';
import { startPostgres } from '../../test/helpers/peers/postgres.ts';
import { peerScript } from '../../test/helpers/peers/process.ts';
import { benchContext, runBench } from '../harness.ts';
import {
  type BenchGateway,
  cpuSeconds,
  fillTable,
  minorFaults,
  psqlToNowhere,
  rssMb,
  startBenchGateway,
  timed,
  treeCpuSeconds,
  waitedChildrenCpuSeconds,
} from './gateway.ts';

const [sizesArg = '3000000,10000000', repsArg = '3'] = process.argv.slice(2);
const sizes = sizesArg.split(',').map(Number);
const reps = Number(repsArg);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

interface DirectRead {
  reader: 'adbc' | 'connectorx';
  uri: string;
  query: string;
  partition_on?: string;
  partitions?: number;
}
interface DirectAnswer {
  rows: number;
  seconds: number;
  cpu_seconds: number;
  error?: { type: string; message: string };
}

/** One read of a table by a target: its rows, and the CPU seconds its client spent (null when not measured). */
type Read = (table: string) => Promise<{ rows: number; clientCpu: number | null; endpoints?: number }>;

interface Target {
  readonly name: string;
  /** The gateway it reads through, whose CPU is counted; none for a direct reader. */
  readonly gateway: BenchGateway | null;
  readonly read: Read;
}

interface Sample {
  seconds: number;
  /** The gateway's RSS at its highest during the read, in MB; 0 for a direct reader. */
  rssPeak: number;
  gatewayCpu: number;
  /** The gateway's minor page faults during the read: 0 for a direct reader. */
  gatewayFaults: number;
  clientCpu: number | null;
  postgresCpu: number;
  endpoints?: number;
}

/** The Flight, SSE and grpcio reads of one gateway (`label` names it in the table). */
async function gatewayTargets(gw: BenchGateway, label: string, all: boolean): Promise<Target[]> {
  const flight = await startFlightClient(benchContext, gw.ca);
  const clientCpu = () => cpuSeconds(flight.pid);
  const job = async (table: string, grpc_protocol = 'arrow-flight') =>
    gw.api('POST', '/api/retrieval/jobs', { dataset_urn: await gw.dataset(table), transport: 'grpc', grpc_protocol });
  const flightRead =
    (parallel: boolean): Read =>
    async (table) => {
      const before = clientCpu();
      const got = await flight.get({ ...flightGet(await job(table), false), read_all: true, parallel });
      if (got.error) throw new Error(`${label} Flight: ${got.error.type} ${got.error.message}`);
      return { rows: got.rows, clientCpu: clientCpu() - before, endpoints: got.endpoints };
    };
  const targets: Target[] = [{ name: `${label} Flight, one stream`, gateway: gw, read: flightRead(false) }];
  if (!all) return targets;
  const grpcio = await startGrpcioClient(benchContext, gw.ca);
  const sse: Read = async (table) => {
    const created = await gw.api('POST', '/api/retrieval/jobs', {
      dataset_urn: await gw.dataset(table),
      transport: 'sse',
    });
    const res = await request(`${gw.url}/api/retrieval/jobs/${created.job_id}/stream`, {
      headers: { authorization: `Bearer ${gw.token}` },
      dispatcher: gw.agent,
    });
    let tail = '';
    for await (const piece of res.body) tail = (tail + Buffer.from(piece).toString('latin1')).slice(-4096);
    return { rows: Number(/"rows":(\d+)/.exec(tail.slice(tail.lastIndexOf('event: complete')))?.[1]), clientCpu: null };
  };
  const v1: Read = async (table) => {
    const { job_id, grpc } = await job(table, 'platform.retrieval.v1');
    return {
      rows: (await grpcio.stream({ endpoint: grpc.endpoint, job_id, token: grpc.token })).rows,
      clientCpu: null,
    };
  };
  return [
    ...targets,
    { name: `${label} Flight, every endpoint at once`, gateway: gw, read: flightRead(true) },
    { name: `${label} SSE (undici)`, gateway: gw, read: sse },
    { name: `${label} gRPC (grpcio)`, gateway: gw, read: v1 },
  ];
}

async function main(): Promise<void> {
  const pg = await startPostgres(benchContext, { settings: { shared_buffers: '256MB' } });
  // The gateways stop after their clients and before PostgreSQL (the harness runs its cleanups last first).
  const cleanups: (() => unknown)[] = [];
  benchContext.after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  for (const n of sizes) await fillTable(pg, `t${n}`, n);
  const gw = await startBenchGateway(cleanups, pg);
  const baseline = process.env.BENCH_BASELINE
    ? await startBenchGateway(cleanups, pg, process.env.BENCH_BASELINE)
    : null;
  const python = await peerScript('adbc');
  const direct = startLineClient<DirectRead, DirectAnswer>(
    benchContext,
    python,
    '../../bench/retrieval/direct_client.py',
    '',
    () => [],
  );
  const uri = `postgresql://${pg.user}:${encodeURIComponent(pg.password)}@${pg.host}:${pg.port}/${pg.database}`;
  const endpoints = Number(process.env.PLATFORM_RETRIEVAL_FLIGHT_ENDPOINTS_MAX ?? 4);
  const directRead =
    (reader: DirectRead['reader'], partitions?: number): Read =>
    async (table) => {
      const split = partitions ? { partition_on: 'id', partitions } : {};
      const got = await direct.call({ reader, uri, query: `SELECT * FROM ${table}`, ...split });
      if (got.error) throw new Error(`${reader}: ${got.error.type} ${got.error.message}`);
      return { rows: got.rows, clientCpu: got.cpu_seconds };
    };
  const psql: Read = async (table) => {
    const before = waitedChildrenCpuSeconds();
    await psqlToNowhere(pg, `COPY ${table} TO STDOUT`);
    return { rows: Number.NaN, clientCpu: waitedChildrenCpuSeconds() - before };
  };
  const targets: Target[] = [
    { name: 'psql COPY (text, to /dev/null)', gateway: null, read: psql },
    { name: 'ADBC PostgreSQL direct', gateway: null, read: directRead('adbc') },
    { name: 'ConnectorX direct', gateway: null, read: directRead('connectorx') },
    { name: `ConnectorX direct, ${endpoints} partitions`, gateway: null, read: directRead('connectorx', endpoints) },
    ...(await gatewayTargets(gw, 'meshgate', true)),
    ...(baseline ? await gatewayTargets(baseline, 'baseline', false) : []),
  ];
  // One read of each first, not counted: the gateway loads Arrow and the PostgreSQL client on its first read.
  for (const target of targets) await target.read(`t${sizes[0]}`);
  const lines: string[] = [];
  for (const n of sizes) lines.push(...(await measureSize(targets, n, pg.pid)));
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** One read by `target` of `table`, with the CPU each party spent on it and its gateway's highest RSS. */
async function sample(target: Target, table: string, n: number, postgresPid: number): Promise<Sample> {
  const { gateway } = target;
  const gatewayBefore = gateway ? cpuSeconds(gateway.pid) : 0;
  const faultsBefore = gateway ? minorFaults(gateway.pid) : 0;
  const postgresBefore = treeCpuSeconds(postgresPid);
  let rssPeak = gateway ? rssMb(gateway.pid) : 0;
  const sampler = gateway ? setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(gateway.pid))), 50) : null;
  const run = await timed(() => target.read(table));
  if (sampler) clearInterval(sampler);
  // A backend's CPU reaches the postmaster's tree once it has exited and been reaped.
  await new Promise((resolve) => setTimeout(resolve, 300));
  if (!Number.isNaN(run.value.rows) && run.value.rows !== n)
    throw new Error(`${target.name}: ${run.value.rows} rows, want ${n}`);
  return {
    seconds: run.seconds,
    rssPeak,
    gatewayCpu: gateway ? cpuSeconds(gateway.pid) - gatewayBefore : 0,
    gatewayFaults: gateway ? minorFaults(gateway.pid) - faultsBefore : 0,
    clientCpu: run.value.clientCpu,
    postgresCpu: treeCpuSeconds(postgresPid) - postgresBefore,
    endpoints: run.value.endpoints,
  };
}

/** Every target reads the `n`-row table `reps` times, in an order rotated each round; the table of the medians. */
async function measureSize(targets: readonly Target[], n: number, postgresPid: number) {
  const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]));
  // Each gateway's RSS before the size's first read: a target's growth is its highest RSS over this.
  const rssBase = new Map(targets.map((t) => [t.name, t.gateway ? rssMb(t.gateway.pid) : 0]));
  for (let round = 0; round < reps; round++) {
    // Each round starts one target later: no target always runs first, or right after the same neighbour.
    for (const target of targets.map((_, i) => targets[(i + round) % targets.length] as Target)) {
      const got = await sample(target, `t${n}`, n, postgresPid);
      samples.get(target.name)?.push(got);
      process.stderr.write(`${n} round ${round + 1}: ${target.name} ${got.seconds.toFixed(3)} s\n`);
    }
  }
  const adbc = median((samples.get('ADBC PostgreSQL direct') ?? []).map((s) => s.seconds));
  return [
    '',
    `${n} rows, ${reps} rounds (median; best in brackets):`,
    '',
    '| target | seconds | rows/s | × ADBC | gateway CPU-s / M rows | gateway page faults / M rows ' +
      '| client CPU-s / M rows | PostgreSQL CPU-s / M rows | gateway RSS growth, MB |',
    '|---|---|---|---|---|---|---|---|---|',
    ...targets.map((target) =>
      reportLine(target, samples.get(target.name) ?? [], n, adbc, rssBase.get(target.name) ?? 0),
    ),
  ];
}

function reportLine(target: Target, list: readonly Sample[], n: number, adbc: number, rssBase: number): string {
  const seconds = median(list.map((s) => s.seconds));
  const best = Math.min(...list.map((s) => s.seconds));
  const perM = (pick: (s: Sample) => number | null) => {
    const values = list.map(pick).filter((v): v is number => v !== null);
    return values.length ? ((median(values) * 1e6) / n).toFixed(2) : '—';
  };
  const parts = list[0]?.endpoints ? ` (${list[0].endpoints} endpoints)` : '';
  const gateway = target.gateway ? perM((s) => s.gatewayCpu) : '—';
  const faults = target.gateway ? String(Math.round((median(list.map((s) => s.gatewayFaults)) * 1e6) / n)) : '—';
  const growth = target.gateway ? (Math.max(...list.map((s) => s.rssPeak)) - rssBase).toFixed(0) : '—';
  return (
    `| ${target.name}${parts} | ${seconds.toFixed(3)} [${best.toFixed(3)}] ` +
    `| ${(n / seconds / 1e6).toFixed(2)} M ` +
    `| ${(adbc / seconds).toFixed(2)} [${(adbc / best).toFixed(2)}] | ${gateway} | ${faults} ` +
    `| ${perM((s) => s.clientCpu)} ` +
    `| ${perM((s) => s.postgresCpu)} | ${growth} |`
  );
}

runBench(main);
