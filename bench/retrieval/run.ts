/**
 * Retrieval throughput against `psql COPY … TO STDOUT` in the same run:
 * a real PostgreSQL, a meshgate started as shipped
 * (`bin/meshgate serve`), and loopback clients: inline and SSE (undici), Arrow
 * Flight DoGet read by pyarrow.flight (test/helpers/flight_client.py), and
 * platform.retrieval.v1 gRPC with three clients, Python grpcio (test/helpers/grpcio_client.py; the
 * platform's public SDK is Python) and Node's Connect gRPC transport at its
 * defaults and with 8 MiB HTTP/2 windows (stream and connection). Prints
 * rows/s per transport and table size, the ratio to COPY, psql's rate for
 * the same rows as row_to_json (the server alone rendering them as JSON),
 * the gateway's CPU seconds per million rows streamed (user + system from
 * /proc/<pid>/stat; the shared machine's load moves it less than rows/s),
 * and the gateway's RSS growth while it streams the large
 * table. Never run by the test suite.
 *
 *   npx tsx bench/retrieval/run.ts [smallRows=1000000] [largeRows=10000000]
 *
 * Environment: BENCH_MESHGATE, the launcher to start (default this checkout's
 * bin/meshgate; another checkout's gives a before/after pair on one box);
 * BENCH_GATEWAY_NODE_OPTIONS, Node flags for the gateway alone (e.g.
 * `--cpu-prof --cpu-prof-dir=…`, written when it exits); BENCH_CLIENTS, a
 * comma-separated subset of the gRPC clients (flight, grpcio, connect,
 * connect-8m) to leave the others out.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport, type GrpcTransportOptions, Http2SessionManager } from '@connectrpc/connect-node';
import { request } from 'undici';
import { RetrievalService } from '../../proto/gen/platform/retrieval/v1/retrieval_pb.ts';
import { flightGet, startFlightClient } from '../../test/helpers/flight.ts';
import { startGrpcioClient } from '../../test/helpers/grpcio.ts';
import { type PostgresPeer, startPostgres } from '../../test/helpers/peers/postgres.ts';
import {
  type Cleanups,
  cpuSeconds,
  fillTable,
  rssMb,
  startBenchGateway,
  timed,
  treeCpuSeconds,
  waitedChildrenCpuSeconds,
} from './gateway.ts';

const execFileAsync = promisify(execFile);
const [smallRows = 1_000_000, largeRows = 10_000_000] = process.argv.slice(2).map(Number);
const cleanups: Cleanups = [];

function mapValues<T extends Record<string, unknown>, R>(
  object: T,
  fn: (value: T[keyof T], key: string) => R,
): Record<string, R> {
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, fn(v as T[keyof T], k)]));
}

async function main(): Promise<void> {
  const pg: PostgresPeer = await startPostgres(
    { after: (fn) => cleanups.push(fn) },
    { settings: { shared_buffers: '256MB' } },
  );
  await fillTable(pg, 'small', smallRows);
  await fillTable(pg, 'large', largeRows);
  const gw = await startBenchGateway(cleanups, pg, process.env.BENCH_MESHGATE, process.env.BENCH_GATEWAY_NODE_OPTIONS);
  const { agent, token } = gw;
  const urns = { small: await gw.dataset('small'), large: await gw.dataset('large') };

  /**
   * psql's COPY to /dev/null: the plain table (the reference), or the rows as row_to_json renders them (the gateway's
   * source).
   */
  const copy = async (table: string, json = false) => {
    const query = json ? `COPY (SELECT row_to_json(r.*) FROM ${table} r) TO STDOUT` : `COPY ${table} TO STDOUT`;
    const env = { ...process.env, PGPASSWORD: pg.password };
    await execFileAsync(
      join(pg.binDir, 'psql'),
      ['-h', pg.host, '-p', String(pg.port), '-U', pg.user, '-d', pg.database, '-c', query, '-o', '/dev/null'],
      {
        env,
      },
    );
  };
  const sse = async (urn: string) => {
    const job = await gw.api('POST', '/api/retrieval/jobs', { dataset_urn: urn, transport: 'sse' });
    const res = await request(`${gw.url}/api/retrieval/jobs/${job.job_id}/stream`, {
      headers: { authorization: `Bearer ${token}` },
      dispatcher: agent,
    });
    let tail = '';
    for await (const piece of res.body) tail = (tail + Buffer.from(piece).toString('latin1')).slice(-4096);
    return Number(/"rows":(\d+)/.exec(tail.slice(tail.lastIndexOf('event: complete')))?.[1]);
  };
  /**
   * A Connect gRPC client (Node's HTTP/2 client), at its defaults or with
   * `window` bytes of HTTP/2 window: the streams' (SETTINGS) and the
   * connection's (WINDOW_UPDATE once the session is up; Node's option covers
   * only the streams).
   */
  const connectClient = (window?: number) => {
    const nodeOptions = { ca: gw.ca, ...(window ? { settings: { initialWindowSize: window } } : {}) };
    const sessions = new Http2SessionManager(gw.url, {}, nodeOptions);
    const sessionManager: NonNullable<GrpcTransportOptions['sessionManager']> = {
      authority: sessions.authority,
      async request(method, path, headers, options) {
        const stream = await sessions.request(method, path, headers, options);
        if (window && stream.session && stream.session.state.effectiveLocalWindowSize !== window)
          stream.session.setLocalWindowSize(window);
        return stream;
      },
      notifyResponseByteRead: (stream) => sessions.notifyResponseByteRead(stream),
    };
    const client = createClient(RetrievalService, createGrpcTransport({ baseUrl: gw.url, sessionManager }));
    return async ({ job_id, grpc: { token: jobToken } }: { job_id: string; grpc: { token: string } }) => {
      let rows = 0;
      for await (const chunk of client.streamData({ jobId: job_id, token: jobToken })) rows += Number(chunk.rowCount);
      return rows;
    };
  };
  const after = { after: (fn: () => unknown) => cleanups.push(fn) };
  const py = await startGrpcioClient(after, gw.ca);
  const flight = await startFlightClient(after, gw.ca);
  type GrpcJob = { job_id: string; grpc: { token: string; endpoint: string; endpoints: { location: string }[] } };
  const allClients: [string, 'arrow-flight' | 'platform.retrieval.v1', (job: GrpcJob) => Promise<number>, string][] = [
    ['Arrow Flight, pyarrow', 'arrow-flight', async (job) => (await flight.get(flightGet(job, false))).rows, 'flight'],
    [
      'Python grpcio',
      'platform.retrieval.v1',
      async ({ job_id, grpc }) => (await py.stream({ endpoint: grpc.endpoint, job_id, token: grpc.token })).rows,
      'grpcio',
    ],
    ['Node Connect', 'platform.retrieval.v1', connectClient(), 'connect'],
    ['Node Connect, 8 MiB windows', 'platform.retrieval.v1', connectClient(8 << 20), 'connect-8m'],
  ];
  const only = process.env.BENCH_CLIENTS?.split(',');
  const grpcClients = allClients.filter(([, , , key]) => !only || only.includes(key));
  const grpc = async (urn: string, [, grpc_protocol, stream]: (typeof grpcClients)[number]) =>
    stream(await gw.api('POST', '/api/retrieval/jobs', { dataset_urn: urn, transport: 'grpc', grpc_protocol }));
  /** Wall time, and the gateway's CPU seconds per million rows, of one stream. */
  const measured = async (n: number, fn: () => Promise<number>) => {
    const cpu = cpuSeconds(gw.pid);
    const run = await timed(fn);
    return { ...run, cpuPerM: ((cpuSeconds(gw.pid) - cpu) * 1e6) / n };
  };
  const results: string[] = [
    `| table | rows | COPY rows/s | COPY row_to_json rows/s (×COPY) | SSE ` +
      `rows/s (×COPY) ` +
      `| ${grpcClients.map(([label]) => `gRPC, ${label} (×COPY)`).join(' | ')} | ` +
      `gateway CPU-s per M rows (SSE ` +
      `/ ${grpcClients.map(([label]) => label).join(' / ')}) |`,
    `|---|---|---|---|---|${grpcClients.map(() => '---|').join('')}---|`,
  ];
  let rss = { base: 0, peak: 0 };
  let copyRate = 0;
  /**
   * CPU seconds per million rows of each party to a stream (PostgreSQL: the postmaster's tree, backends included),
   * beside what the box's cores give at COPY's rate: how far a stream can go on this box before it runs out of cores.
   */
  const budget: string[] = [];
  const parties = async (n: number, fn: () => Promise<unknown>, others: Record<string, () => number>) => {
    const read = () => ({ postgres: treeCpuSeconds(pg.pid), ...mapValues(others, (f) => f()) });
    const before = read();
    const run = await timed(fn);
    // psql's backend ends after psql does, and its CPU reaches the postmaster's cutime once it is reaped.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = read();
    const perM = mapValues(after, (v, k) => ((v - (before[k as keyof typeof before] ?? 0)) * 1e6) / n);
    return { seconds: run.seconds, perM };
  };
  for (const [name, n] of [
    ['small', smallRows],
    ['large', largeRows],
  ] as const) {
    const c = await timed(() => copy(name));
    if (name === 'small') copyRate = n / c.seconds;
    const j = await timed(() => copy(name, true));
    const watch = name === 'large';
    const base = rssMb(gw.pid);
    let peak = base;
    const sampler = watch ? setInterval(() => (peak = Math.max(peak, rssMb(gw.pid))), 100) : undefined;
    const streams = [await measured(n, () => sse(urns[name]))];
    for (const client of grpcClients) streams.push(await measured(n, () => grpc(urns[name], client)));
    clearInterval(sampler);
    if (watch) rss = { base, peak };
    if (streams.some((x) => x.value !== n))
      throw new Error(`row count mismatch: ${streams.map((x) => x.value).join(', ')}, want ${n}`);
    const rate = (x: { seconds: number }) => Math.round(n / x.seconds);
    const ratio = (x: { seconds: number }) => `${rate(x)} (${(rate(x) / rate(c)).toFixed(2)})`;
    results.push(
      `| ${name} | ${n} | ${rate(c)} | ${ratio(j)} | ${streams.map(ratio).join(' | ')} | ` +
        `${streams.map((x) => x.cpuPerM.toFixed(2)).join(' / ')} |`,
    );
  }
  // After every stream above, so the gateway is warm: the small table again, each party's CPU read around it.
  {
    const [name, n] = ['small', smallRows] as const;
    const cores = (await import('node:os')).availableParallelism();
    const psql = await parties(n, () => copy(name), { psql: waitedChildrenCpuSeconds });
    const flightRun = allClients[0] as (typeof allClients)[number];
    const flightParties = await parties(n, () => grpc(urns[name], flightRun), {
      gateway: () => cpuSeconds(gw.pid),
      pyarrow: () => cpuSeconds(flight.pid),
    });
    const line = (label: string, x: { seconds: number; perM: Record<string, number> }) => {
      const sum = Object.values(x.perM).reduce((a, b) => a + b, 0);
      const parts = Object.entries(x.perM).map(([k, v]) => `${k} ${v.toFixed(2)}`);
      return `| ${label} | ${Math.round(n / x.seconds)} | ${parts.join(' + ')} = ${sum.toFixed(2)} |`;
    };
    budget.push(
      '',
      `CPU-s per M rows by party (${name} table; ${cores} cores give ` +
        `${((cores * 1e6) / copyRate).toFixed(2)} CPU-s per M rows at COPY's rate):`,
      '| stream | rows/s | CPU-s per M rows |',
      '|---|---|---|',
      line('psql COPY', psql),
      line('Arrow Flight, pyarrow', flightParties),
    );
  }
  const inlineRuns = 20;
  const inline = await timed(async () => {
    for (let i = 0; i < inlineRuns; i++)
      await gw.api('POST', '/api/retrieval/jobs', {
        dataset_urn: urns.small,
        transport: 'inline',
        limit_rows: 10_000,
      });
  });
  results.push(
    '',
    `inline (10k rows, ${inlineRuns} jobs): ${Math.round((inlineRuns * 10_000) / inline.seconds)} rows/s`,
  );
  results.push(
    `gateway RSS while streaming the large ` +
      `table: ${rss.base.toFixed(0)} MB → ` +
      `peak ${rss.peak.toFixed(0)} MB ` +
      `(growth ${(rss.peak - rss.base).toFixed(0)} MB)`,
  );
  process.stdout.write(`${[...results, ...budget].join('\n')}\n`);
}

try {
  await main();
} finally {
  for (const fn of cleanups.reverse()) await fn();
}
