/**
 * bench/proxy: RPS, p50/p99 and CPU per request of (a) the upstream direct,
 * (b) nginx as a keep-alive reverse proxy, (c) meshgate's runtime proxy with
 * a bearer token — same box, same run, short runs repeated in rotating
 * order, medians reported with ratios; then streaming throughput (curl,
 * 512 MiB) and RSS with a stalled client. Never run by the test suite.
 * `--engine sqlite,postgres` runs one meshgate per engine side by side in the
 * same rotation (`meshgate` on SQLite, `meshgate_postgres` on a throwaway
 * PostgreSQL, bench/engines.ts) and adds their ratios.
 *   npx tsx bench/proxy/run.ts [--engine sqlite]   (env: BENCH_SECONDS=5 BENCH_REPS=3 BENCH_CONNECTIONS=32)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { parseArgs } from 'node:util';
import type { DatabaseEngine } from '../../gateway/db/connection.ts';
import { parseEngines, postgresIfNeeded, serveEnv } from '../engines.ts';
import { type Meshgate, startMeshgate } from './meshgate.ts';
import {
  CONNECTIONS,
  child,
  curlMBps,
  freePort,
  median,
  procCpuMicros,
  REPS,
  round,
  rssBytes,
  runBench,
  SECONDS,
  STREAM_MB,
  startNginx,
  type WrkResult,
  wrk,
} from './peers.ts';

const stops: (() => unknown)[] = [];
const { values: flags } = parseArgs({ options: { engine: { type: 'string', default: 'sqlite' } } });
const engines = parseEngines(flags.engine);

/** `pid`: the process whose CPU is counted (none for the upstream, which is the reference). */
type Target = { url: string; token: string | undefined; pid: number | null };
type Targets = Record<string, Target>;
const MESHGATE_OF: Record<DatabaseEngine, string> = { sqlite: 'meshgate', postgres: 'meshgate_postgres' };
const meshgates = engines.map((engine) => MESHGATE_OF[engine]);
interface Measured {
  runs: Record<string, WrkResult[]>;
  cpu: Record<string, number[]>;
  /** Per meshgate target. */
  peakRss: Record<string, number>;
  stream: Record<string, number>;
  stalled: Awaited<ReturnType<typeof stalledClientRss>>;
}

/** One wrk run on /hello and, for a process we started, its CPU time per request (µs). */
function wrkWithCpu({ pid, ...target }: Target): { result: WrkResult; cpuPerRequest: number | null } {
  const before = pid === null ? 0 : procCpuMicros(pid);
  const result = wrk(`${target.url}/hello`, target.token);
  return { result, cpuPerRequest: pid === null ? null : (procCpuMicros(pid) - before) / result.requests };
}

/**
 * REPS rounds of wrk on each target, rotating who goes first; CPU per request of the proxies, the gateways' peak RSS.
 */
function measureRps(targets: Targets): Pick<Measured, 'runs' | 'cpu' | 'peakRss'> {
  const names = Object.keys(targets);
  const runs: Record<string, WrkResult[]> = Object.fromEntries(names.map((n) => [n, []]));
  const cpu: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const peakRss: Record<string, number> = {};
  for (const name of names) wrk(`${targets[name]?.url}/hello`, targets[name]?.token); // warm-up (JIT, pools, tokens)
  for (let rep = 0; rep < REPS; rep++) {
    const shift = rep % names.length;
    for (const name of [...names.slice(shift), ...names.slice(0, shift)]) {
      const target = targets[name] as Target;
      const { result, cpuPerRequest } = wrkWithCpu(target);
      runs[name]?.push(result);
      if (cpuPerRequest !== null) cpu[name]?.push(cpuPerRequest);
      if (meshgates.includes(name) && target.pid !== null)
        peakRss[name] = Math.max(peakRss[name] ?? 0, rssBytes(target.pid));
      process.stderr.write(
        `rep ${rep + 1} ${name.padEnd(17)} ${result.rps.toFixed(0)} rps ` +
          `p50 ${result.p50}ms p99 ${result.p99}ms ` +
          `errors ${result.errors}\n`,
      );
    }
  }
  return { runs, cpu, peakRss };
}

function summarize(names: readonly string[], { runs, cpu, peakRss, stream, stalled }: Measured) {
  const m = (name: string, key: keyof WrkResult) => median((runs[name] ?? []).map((r) => r[key]));
  // Each rep runs the targets back to back, so a rep's own ratio shares its moment's load.
  const byRep = (a: string, b: string) =>
    (runs[a] ?? []).map((r, i) => round(r.rps / (runs[b]?.[i]?.rps ?? Number.NaN), 2));
  const against = (gateway: string, peer: string) => ({
    [`${gateway}_vs_${peer}_rps`]: round(m(gateway, 'rps') / m(peer, 'rps'), 2),
    [`${gateway}_vs_${peer}_p99`]: round(m(gateway, 'p99') / m(peer, 'p99'), 2),
    [`${gateway}_vs_${peer}_rps_by_rep`]: byRep(gateway, peer),
  });
  const [sqlite, postgres] = [MESHGATE_OF.sqlite, MESHGATE_OF.postgres];
  return {
    settings: {
      seconds: SECONDS,
      reps: REPS,
      connections: CONNECTIONS,
      stream_mb: STREAM_MB,
      cores: execFileSync('nproc', { encoding: 'utf8' }).trim(),
      engines,
    },
    rps: Object.fromEntries(names.map((n) => [n, Math.round(m(n, 'rps'))])),
    p50_ms: Object.fromEntries(names.map((n) => [n, m(n, 'p50')])),
    p99_ms: Object.fromEntries(names.map((n) => [n, m(n, 'p99')])),
    errors: Object.fromEntries(names.map((n) => [n, (runs[n] ?? []).reduce((s, r) => s + r.errors, 0)])),
    cpu_us_per_request: Object.fromEntries(
      names.filter((n) => (cpu[n] ?? []).length > 0).map((n) => [n, round(median(cpu[n] ?? []))]),
    ),
    ratios: {
      ...Object.assign({}, ...meshgates.map((g) => against(g, 'nginx'))),
      ...Object.fromEntries(meshgates.map((g) => [`${g}_vs_direct_rps`, round(m(g, 'rps') / m('direct', 'rps'), 2)])),
      ...Object.fromEntries(
        meshgates.map((g) => [`${g}_vs_nginx_stream`, round((stream[g] ?? 0) / (stream.nginx ?? 1), 2)]),
      ),
      ...(meshgates.includes(sqlite) && meshgates.includes(postgres)
        ? {
            ...against(postgres, sqlite),
            [`${postgres}_vs_${sqlite}_p50`]: round(m(postgres, 'p50') / m(sqlite, 'p50'), 2),
            [`${postgres}_vs_${sqlite}_cpu`]: round(median(cpu[postgres] ?? []) / median(cpu[sqlite] ?? []), 2),
          }
        : {}),
    },
    stream_MBps: Object.fromEntries(names.map((n) => [n, Math.round(stream[n] ?? 0)])),
    rss_mb: {
      peak_under_load: Object.fromEntries(meshgates.map((g) => [g, round((peakRss[g] ?? 0) / 2 ** 20)])),
      ...stalled,
    },
  };
}

async function main(): Promise<void> {
  const upstream = await child<{ port: number }>('upstream.ts', []);
  const upstreamUrl = `http://127.0.0.1:${upstream.hello.port}`;
  const postgres = await postgresIfNeeded(engines, { after: (stop) => void stops.push(stop) });
  const gateways: Meshgate[] = [];
  for (const engine of engines) {
    const gateway = await startMeshgate(upstreamUrl, await freePort(), [], await serveEnv(engine, postgres));
    stops.push(gateway.stop);
    gateways.push(gateway);
  }
  const nginx = await startNginx(upstream.hello.port);
  const targets: Targets = {
    direct: { url: upstreamUrl, token: undefined, pid: null },
    nginx: { url: nginx.url, token: undefined, pid: nginx.pid },
    ...Object.fromEntries(gateways.map((g, i) => [meshgates[i], { url: g.url, token: g.token, pid: g.pid }])),
  };
  const names = Object.keys(targets);
  const measured = measureRps(targets);
  const stream: Record<string, number> = {};
  for (const name of names) {
    const { url, token } = targets[name] as Target;
    stream[name] = median(Array.from({ length: REPS }, () => curlMBps(url, token)));
  }
  // The stalled client exercises the proxy's backpressure, which no engine touches: the first gateway only.
  const summary = summarize(names, { ...measured, stream, stalled: await stalledClientRss(gateways[0] as Meshgate) });
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  mkdirSync('.bench-out', { recursive: true });
  writeFileSync('.bench-out/proxy.json', JSON.stringify(summary, null, 2));
}

/** A client that asks for 1 GiB and reads nothing: the proxy must stop pulling from the upstream, not buffer it. */
async function stalledClientRss(gateway: Meshgate) {
  const url = new URL(gateway.url);
  const before = rssBytes(gateway.pid);
  const socket = connect(Number(url.port), url.hostname);
  socket.write(
    `GET ${url.pathname}/stream?mb=1024 ` +
      `HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: ` +
      `Bearer ${gateway.token}\r\n\r\n`,
  );
  socket.pause();
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const during = rssBytes(gateway.pid);
  socket.destroy();
  return { stalled_client_before: round(before / 2 ** 20), stalled_client_after_3s: round(during / 2 ** 20) };
}

runBench(main, stops);
