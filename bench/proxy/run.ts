/**
 * bench/proxy: RPS, p50/p99 and CPU per request of (a) the upstream direct,
 * (b) nginx as a keep-alive reverse proxy, (c) meshgate's runtime proxy with
 * a bearer token — same box, same run, short runs repeated in rotating
 * order, medians reported with ratios; then streaming throughput (curl,
 * 512 MiB) and RSS with a stalled client. Never run by the test suite.
 *   npx tsx bench/proxy/run.ts   (env: BENCH_SECONDS=5 BENCH_REPS=3 BENCH_CONNECTIONS=32)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
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

const stops: (() => void)[] = [];

type Target = { url: string; token: string | undefined };
type Targets = Record<'direct' | 'nginx' | 'meshgate', Target>;
interface Measured {
  runs: Record<string, WrkResult[]>;
  cpu: Record<string, number[]>;
  peakRss: number;
  stream: Record<string, number>;
  stalled: Awaited<ReturnType<typeof stalledClientRss>>;
}

/** One wrk run on /hello and, for a process we started, its CPU time per request (µs). */
function wrkWithCpu(target: Target, pid: number | null): { result: WrkResult; cpuPerRequest: number | null } {
  const before = pid === null ? 0 : procCpuMicros(pid);
  const result = wrk(`${target.url}/hello`, target.token);
  return { result, cpuPerRequest: pid === null ? null : (procCpuMicros(pid) - before) / result.requests };
}

/**
 * REPS rounds of wrk on each target, rotating who goes first; CPU per request of the two proxies, the gateway's peak
 * RSS.
 */
function measureRps(
  targets: Targets,
  pids: { meshgate: number; nginx: number },
): Pick<Measured, 'runs' | 'cpu' | 'peakRss'> {
  const names = Object.keys(targets) as (keyof Targets)[];
  const runs: Record<string, WrkResult[]> = { direct: [], nginx: [], meshgate: [] };
  const cpu: Record<string, number[]> = { nginx: [], meshgate: [] };
  let peakRss = 0;
  for (const name of names) wrk(`${targets[name].url}/hello`, targets[name].token); // warm-up (JIT, pools, token cache)
  for (let rep = 0; rep < REPS; rep++) {
    for (const name of [...names.slice(rep % 3), ...names.slice(0, rep % 3)]) {
      const { result, cpuPerRequest } = wrkWithCpu(targets[name], name === 'direct' ? null : pids[name]);
      runs[name]?.push(result);
      if (cpuPerRequest !== null) cpu[name]?.push(cpuPerRequest);
      if (name === 'meshgate') peakRss = Math.max(peakRss, rssBytes(pids.meshgate));
      process.stderr.write(
        `rep ${rep + 1} ${name.padEnd(8)} ${result.rps.toFixed(0)} rps ` +
          `p50 ${result.p50}ms p99 ${result.p99}ms ` +
          `errors ${result.errors}\n`,
      );
    }
  }
  return { runs, cpu, peakRss };
}

function summarize(names: readonly string[], { runs, cpu, peakRss, stream, stalled }: Measured) {
  const m = (name: string, key: keyof WrkResult) => median((runs[name] ?? []).map((r) => r[key]));
  return {
    settings: {
      seconds: SECONDS,
      reps: REPS,
      connections: CONNECTIONS,
      stream_mb: STREAM_MB,
      cores: execFileSync('nproc', { encoding: 'utf8' }).trim(),
    },
    rps: Object.fromEntries(names.map((n) => [n, Math.round(m(n, 'rps'))])),
    p50_ms: Object.fromEntries(names.map((n) => [n, m(n, 'p50')])),
    p99_ms: Object.fromEntries(names.map((n) => [n, m(n, 'p99')])),
    errors: Object.fromEntries(names.map((n) => [n, (runs[n] ?? []).reduce((s, r) => s + r.errors, 0)])),
    cpu_us_per_request: { nginx: round(median(cpu.nginx ?? [])), meshgate: round(median(cpu.meshgate ?? [])) },
    ratios: {
      meshgate_vs_nginx_rps: round(m('meshgate', 'rps') / m('nginx', 'rps'), 2),
      meshgate_vs_direct_rps: round(m('meshgate', 'rps') / m('direct', 'rps'), 2),
      meshgate_vs_nginx_p99: round(m('meshgate', 'p99') / m('nginx', 'p99'), 2),
      // Each rep runs the targets back to back, so a rep's own ratio shares its moment's load.
      meshgate_vs_nginx_rps_by_rep: (runs.meshgate ?? []).map((r, i) =>
        round(r.rps / (runs.nginx?.[i]?.rps ?? Number.NaN), 2),
      ),
      meshgate_vs_nginx_stream: round((stream.meshgate ?? 0) / (stream.nginx ?? 1), 2),
    },
    stream_MBps: Object.fromEntries(names.map((n) => [n, Math.round(stream[n] ?? 0)])),
    meshgate_rss_mb: { peak_under_load: round(peakRss / 2 ** 20), ...stalled },
  };
}

async function main(): Promise<void> {
  const upstream = await child<{ port: number }>('upstream.ts', []);
  const upstreamUrl = `http://127.0.0.1:${upstream.hello.port}`;
  const gateway = await startMeshgate(upstreamUrl, await freePort());
  stops.push(gateway.stop);
  const nginx = await startNginx(upstream.hello.port);
  const targets: Targets = {
    direct: { url: upstreamUrl, token: undefined },
    nginx: { url: nginx.url, token: undefined },
    meshgate: { url: gateway.url, token: gateway.token },
  };
  const names = Object.keys(targets) as (keyof Targets)[];
  const measured = measureRps(targets, { meshgate: gateway.pid, nginx: nginx.pid });
  const stream: Record<string, number> = {};
  for (const name of names)
    stream[name] = median(Array.from({ length: REPS }, () => curlMBps(targets[name].url, targets[name].token)));
  const summary = summarize(names, { ...measured, stream, stalled: await stalledClientRss(gateway) });
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
