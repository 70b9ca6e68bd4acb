/**
 * Two gateways in one run, for a before/after figure on a shared machine:
 * this checkout's (`after`) and another checkout's launcher (`before`,
 * BENCH_BASELINE=/path/to/checkout/bin/meshgate), one PostgreSQL table of
 * `rows` rows (the benchmark table of run.ts), and `reps` rounds alternating
 * which gateway goes first. Each round reads the table over Arrow Flight
 * (pyarrow) and platform.retrieval.v1 (grpcio) from each gateway, and once
 * with `psql COPY`. Prints every round, then the medians: the gateway's CPU
 * seconds per million rows per stream (on Flight, also the part its V8
 * helper threads spent: concurrent marking and sweeping, /proc per thread),
 * Flight ÷ grpcio, and rows/s ÷ COPY,
 * with the load average before and after. Never run by the test suite.
 * BENCH_STREAMS=flight reads Flight alone (the A/B of the Flight path,
 * more reads in the same time); the default is `flight,grpcio`.
 *
 *   BENCH_BASELINE=/path/bin/meshgate npx tsx bench/retrieval/pair.ts [rows=3000000] [reps=4]
 */
import { loadavg } from 'node:os';
import { flightGet, startFlightClient } from '../../test/helpers/flight.ts';
import { startGrpcioClient } from '../../test/helpers/grpcio.ts';
import { startPostgres } from '../../test/helpers/peers/postgres.ts';
import {
  type BenchGateway,
  type Cleanups,
  cpuSeconds,
  fillTable,
  psqlToNowhere,
  startBenchGateway,
  timed,
  v8HelperSeconds,
} from './gateway.ts';

const [rows = 3_000_000, reps = 4] = process.argv.slice(2).map(Number);
const baseline = process.env.BENCH_BASELINE;
if (!baseline) throw new Error('BENCH_BASELINE: the launcher (bin/meshgate) of the checkout to compare with');
const withGrpcio = (process.env.BENCH_STREAMS ?? 'flight,grpcio').split(',').includes('grpcio');
const cleanups: Cleanups = [];
const after = { after: (fn: () => unknown) => cleanups.push(fn) };
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
/** A figure to print; a dash for a stream not read (NaN). */
const figure = (n: number, digits: number) => (Number.isNaN(n) ? '—' : n.toFixed(digits));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

interface Side {
  readonly name: string;
  readonly gw: BenchGateway;
  flight(job: any): Promise<number>;
  grpcio(job: any): Promise<number>;
  readonly figures: Record<'flightCpu' | 'flightHelpers' | 'grpcioCpu' | 'flightRate', number[]>;
}

async function side(name: string, gw: BenchGateway): Promise<Side> {
  const flight = await startFlightClient(after, gw.ca);
  const py = withGrpcio ? await startGrpcioClient(after, gw.ca) : null;
  return {
    name,
    gw,
    flight: async (job) => (await flight.get(flightGet(job, false))).rows,
    grpcio: async ({ job_id, grpc }) =>
      (await (py as NonNullable<typeof py>).stream({ endpoint: grpc.endpoint, job_id, token: grpc.token })).rows,
    figures: { flightCpu: [], flightHelpers: [], grpcioCpu: [], flightRate: [] },
  };
}

/** One stream of the table: its rows/s and the gateway's CPU seconds per million rows. */
async function stream(s: Side, protocol: 'arrow-flight' | 'platform.retrieval.v1') {
  const urn = await s.gw.dataset('bench');
  const job = await s.gw.api('POST', '/api/retrieval/jobs', {
    dataset_urn: urn,
    transport: 'grpc',
    grpc_protocol: protocol,
  });
  const cpu = cpuSeconds(s.gw.pid);
  const helpers = v8HelperSeconds(s.gw.pid);
  const run = await timed(() => (protocol === 'arrow-flight' ? s.flight(job) : s.grpcio(job)));
  if (run.value !== rows) throw new Error(`${s.name} ${protocol}: ${run.value} rows, want ${rows}`);
  return {
    rate: rows / run.seconds,
    cpuPerM: ((cpuSeconds(s.gw.pid) - cpu) * 1e6) / rows,
    helpersPerM: ((v8HelperSeconds(s.gw.pid) - helpers) * 1e6) / rows,
  };
}

async function main(): Promise<void> {
  const pg = await startPostgres(after, { settings: { shared_buffers: '256MB' } });
  await fillTable(pg, 'bench', rows);
  const copy = () => psqlToNowhere(pg, 'COPY bench TO STDOUT');
  const sides = [
    await side('before', await startBenchGateway(cleanups, pg, baseline)),
    await side('after', await startBenchGateway(cleanups, pg)),
  ];
  const copyRates: number[] = [];
  const lines = [
    `load average at start: ${load()}`,
    '| round | gateway | Flight CPU-s per M rows (V8 helper threads) | grpcio CPU-s per M rows | Flight rows/s | ' +
      'COPY rows/s |',
    '|---|---|---|---|---|---|',
  ];
  for (let round = 1; round <= reps; round++) {
    const copyRate = rows / (await timed(copy)).seconds;
    copyRates.push(copyRate);
    for (const s of round % 2 ? sides : [...sides].reverse()) {
      const flight = await stream(s, 'arrow-flight');
      const grpcio = withGrpcio ? await stream(s, 'platform.retrieval.v1') : { cpuPerM: Number.NaN };
      s.figures.flightCpu.push(flight.cpuPerM);
      s.figures.flightHelpers.push(flight.helpersPerM);
      s.figures.grpcioCpu.push(grpcio.cpuPerM);
      s.figures.flightRate.push(flight.rate);
      lines.push(
        `| ${round} | ${s.name} | ${flight.cpuPerM.toFixed(3)} (${flight.helpersPerM.toFixed(3)}) | ` +
          `${figure(grpcio.cpuPerM, 3)} | ` +
          `${Math.round(flight.rate)} | ${Math.round(copyRate)} |`,
      );
    }
  }
  lines.push(
    `load average at end: ${load()}`,
    '',
    '| gateway (medians) | Flight CPU-s per M rows (V8 helper threads) | grpcio | Flight ÷ grpcio | ' +
      'Flight rows/s ÷ COPY |',
    '|---|---|---|---|---|',
  );
  for (const { name, figures } of sides) {
    const [flight, grpcio] = [median(figures.flightCpu), median(figures.grpcioCpu)];
    lines.push(
      `| ${name} | ${flight.toFixed(3)} (${median(figures.flightHelpers).toFixed(3)}) | ${figure(grpcio, 3)} | ` +
        `${figure(flight / grpcio, 2)} | ` +
        `${(median(figures.flightRate) / median(copyRates)).toFixed(2)} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

try {
  await main();
} finally {
  for (const fn of cleanups.reverse()) await fn();
}
