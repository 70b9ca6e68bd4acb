/**
 * bench/proxy/workers.ts: the process model's figures, one run, same box.
 * The same runtime-proxy request (`GET /hello` through each proxy to the
 * bench upstream, plain HTTP, keep-alive) against meshgate with one process
 * and with two workers (a SO_REUSEPORT socket each, the default, and one
 * socket the primary shares through node:cluster),
 * nginx with one worker and with `worker_processes auto`, Caddy and HAProxy.
 * Each target runs in rotating order per rep; medians reported. CPU per
 * request counts every process of a target (meshgate's primary and workers,
 * nginx's master and workers); wrk's own CPU is reported too, since it shares
 * the two cores. RSS per worker is the largest worker's after its runs. node-floor-1 and -2 are the least proxy Node.js
 * can be (node-floor.ts), as one process and two: the floor any gateway written on Node.js stands on. Bytes allocated
 * a request (meshgate and the floor): V8's GC trace over each run (gc-trace.mjs), summed; `vs_floor` sets meshgate's
 * CPU, allocation, p99 and RSS against the floor's.
 *   npx tsx bench/proxy/workers.ts   (env: BENCH_SECONDS=5 BENCH_REPS=3 BENCH_CONNECTIONS=32)
 * BENCH_TARGETS=meshgate-1,nginx-auto runs only the targets named; BENCH_BASELINE=<another checkout, built> adds
 * base-meshgate-1 and base-meshgate-2, that checkout's bin/meshgate, to the rotation (a change against main's build).
 */
import { mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMeshgate } from './meshgate.ts';
import {
  CONNECTIONS,
  child,
  childrenOf,
  freePort,
  GC_TRACE_IMPORT,
  gcAllocatedBytes,
  median,
  procCpuMicros,
  REPS,
  round,
  rssBytes,
  runBench,
  SECONDS,
  startCaddy,
  startHaproxy,
  startNginx,
  type Target,
  type WrkResult,
  wrk,
} from './peers.ts';

const stops: (() => void)[] = [];

/** A Node.js target also names the file its collections are traced to (gc-trace.mjs), for bytes allocated. */
type MeasuredTarget = Target & { gcLog?: string };

async function meshgate(
  upstream: string,
  workers: number,
  listen: 'reuseport' | 'shared' = 'reuseport',
  checkout?: string,
): Promise<MeasuredTarget> {
  const flags = ['--workers', String(workers)];
  // bin/meshgate adds its own Node options before these; the workers inherit them.
  const nodeOptions = [process.env.NODE_OPTIONS, GC_TRACE_IMPORT].filter(Boolean).join(' ');
  const env = { PLATFORM_WORKER_LISTEN: listen, NODE_OPTIONS: nodeOptions };
  const gateway = await startMeshgate(upstream, await freePort(), flags, env, checkout);
  stops.push(gateway.stop);
  const pids = () => (workers === 1 ? [gateway.pid] : childrenOf(gateway.pid));
  return { url: gateway.url, pid: gateway.pid, token: gateway.token, workers: pids, gcLog: gateway.logFile };
}

/** bench/proxy/node-floor.ts, run by Node.js itself with the launcher's memory settings: what Node.js alone costs. */
async function nodeFloor(upstream: string, processes: number): Promise<MeasuredTarget> {
  const port = await freePort();
  const env = { ...process.env, MALLOC_ARENA_MAX: '1', MALLOC_TRIM_THRESHOLD_: '131072' };
  const gcDir = mkdtempSync(join(tmpdir(), 'bench-node-floor-'));
  stops.push(() => rmSync(gcDir, { recursive: true, force: true }));
  const gcLog = join(gcDir, 'stdout.log');
  const { proc } = await child('node-floor.ts', [upstream, String(port), String(processes)], {
    // --trace-gc-nvp as given to meshgate by gc-trace.mjs (its children inherit the flags).
    execArgv: ['--max-semi-space-size=4', '--disable-warning=ExperimentalWarning', '--trace-gc-nvp'],
    env,
    stdout: openSync(gcLog, 'a'),
  });
  const pid = proc.pid as number;
  return { url: `http://127.0.0.1:${port}`, pid, workers: () => (processes === 1 ? [pid] : childrenOf(pid)), gcLog };
}

async function nginx(upstreamPort: number, workers: number | 'auto'): Promise<Target> {
  const started = await startNginx(upstreamPort, workers);
  return { url: `${started.url}`, pid: started.pid, workers: () => childrenOf(started.pid) };
}

/**
 * One wrk run against `target`: its result, the CPU its processes used, and for a Node.js target what V8 allocated
 * (its GC trace from where it stands now: what the target allocated between its runs is not counted).
 */
function measure(target: MeasuredTarget, gcRead: number) {
  const gcFrom = target.gcLog ? gcAllocatedBytes(target.gcLog, gcRead).end : 0;
  const before = procCpuMicros(target.pid);
  const result = wrk(`${target.url}/hello`, target.token);
  const cpuMicros = procCpuMicros(target.pid) - before;
  return { result, cpuMicros, gc: target.gcLog ? gcAllocatedBytes(target.gcLog, gcFrom) : null };
}

/** REPS runs of every target, in rotating order per rep: each run's result, CPU and allocation a request, RSS. */
function rotate(targets: Record<string, MeasuredTarget>) {
  const names = Object.keys(targets);
  const runs: Record<string, WrkResult[]> = Object.fromEntries(names.map((n) => [n, []]));
  const cpu: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const rss: Record<string, number> = {};
  const allocated: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const gcRead: Record<string, number> = {};
  for (let rep = 0; rep < REPS; rep++) {
    const shift = rep % names.length;
    for (const name of [...names.slice(shift), ...names.slice(0, shift)]) {
      const target = targets[name] as MeasuredTarget;
      const { result, cpuMicros, gc } = measure(target, gcRead[name] ?? 0);
      runs[name]?.push(result);
      cpu[name]?.push(cpuMicros / result.requests);
      if (gc) {
        allocated[name]?.push(gc.bytes / result.requests);
        gcRead[name] = gc.end;
      }
      rss[name] = Math.max(rss[name] ?? 0, ...target.workers().map(rssBytes));
      const line =
        `${result.rps.toFixed(0)} rps p99 ${result.p99}ms ` +
        `wrk cpu ${result.wrkCpuSeconds.toFixed(1)}s errors ${result.errors}`;
      process.stderr.write(`rep ${rep + 1} ${name.padEnd(21)} ${line}\n`);
    }
  }
  return { runs, cpu, rss, allocated };
}

/** meshgate against the Node.js floor, one process and two: the request path's budget. */
function versusFloor(
  cpu: Record<string, number[]>,
  allocated: Record<string, number[]>,
  rss: Record<string, number>,
  p99: (target: string) => number,
) {
  return Object.fromEntries(
    ['1', '2'].map((n) => {
      const [mine, floor] = [`meshgate-${n}`, `node-floor-${n}`];
      const by = (figure: (t: string) => number) => round(figure(mine) / figure(floor), 2);
      return [
        n,
        {
          cpu: by((t) => median(cpu[t] ?? [])),
          alloc: by((t) => median(allocated[t] ?? [])),
          p99: by(p99),
          rss_mb_over: round(((rss[mine] ?? 0) - (rss[floor] ?? 0)) / 2 ** 20),
        },
      ];
    }),
  );
}

async function main(): Promise<void> {
  const upstream = await child<{ port: number }>('upstream.ts', []);
  const upstreamUrl = `http://127.0.0.1:${upstream.hello.port}`;
  const baseline = process.env.BENCH_BASELINE;
  const starts: Record<string, () => Promise<MeasuredTarget>> = {
    'meshgate-1': () => meshgate(upstreamUrl, 1),
    'meshgate-2': () => meshgate(upstreamUrl, 2),
    'meshgate-2-shared': () => meshgate(upstreamUrl, 2, 'shared'),
    ...(baseline && {
      'base-meshgate-1': () => meshgate(upstreamUrl, 1, 'reuseport', baseline),
      'base-meshgate-2': () => meshgate(upstreamUrl, 2, 'reuseport', baseline),
    }),
    'node-floor-1': () => nodeFloor(upstreamUrl, 1),
    'node-floor-2': () => nodeFloor(upstreamUrl, 2),
    'nginx-1': () => nginx(upstream.hello.port, 1),
    'nginx-auto': () => nginx(upstream.hello.port, 'auto'),
    caddy: () => startCaddy(upstream.hello.port, stops),
    haproxy: () => startHaproxy(upstream.hello.port, stops),
  };
  const only = process.env.BENCH_TARGETS?.split(',');
  const targets: Record<string, MeasuredTarget> = {};
  for (const [name, start] of Object.entries(starts)) if (!only || only.includes(name)) targets[name] = await start();
  const names = Object.keys(targets);
  // warm-up (JIT, pools, token cache)
  for (const name of names) wrk(`${targets[name]?.url}/hello`, targets[name]?.token);
  const { runs, cpu, rss, allocated } = rotate(targets);
  const m = (name: string, key: keyof WrkResult) => median((runs[name] ?? []).map((r) => r[key]));
  const rps = (name: string) => m(name, 'rps');
  const summary = {
    settings: {
      seconds: SECONDS,
      reps: REPS,
      connections: CONNECTIONS,
      cores: (await import('node:os')).availableParallelism(),
    },
    rps: Object.fromEntries(names.map((n) => [n, Math.round(rps(n))])),
    p50_ms: Object.fromEntries(names.map((n) => [n, m(n, 'p50')])),
    p99_ms: Object.fromEntries(names.map((n) => [n, m(n, 'p99')])),
    errors: Object.fromEntries(names.map((n) => [n, (runs[n] ?? []).reduce((s, r) => s + r.errors, 0)])),
    cpu_us_per_request: Object.fromEntries(names.map((n) => [n, round(median(cpu[n] ?? []))])),
    wrk_cpu_share: Object.fromEntries(names.map((n) => [n, round(m(n, 'wrkCpuSeconds') / SECONDS, 2)])),
    rss_mb_per_worker: Object.fromEntries(names.map((n) => [n, round((rss[n] ?? 0) / 2 ** 20)])),
    // V8's heap allocation a request (Node.js targets only): the GC trace's `allocated=` over the run (gc-trace.mjs).
    alloc_kb_per_request: Object.fromEntries(
      names.filter((n) => allocated[n]?.length).map((n) => [n, round(median(allocated[n] ?? []) / 1024, 2)]),
    ),
    // meshgate against the Node.js floor, one process and two: the request path's budget.
    vs_floor: versusFloor(cpu, allocated, rss, (t) => m(t, 'p99')),
    ratios: {
      two_workers_vs_nginx_auto_rps: round(rps('meshgate-2') / rps('nginx-auto'), 2),
      two_workers_vs_one_rps: round(rps('meshgate-2') / rps('meshgate-1'), 2),
      two_workers_vs_nginx_auto_p99: round(m('meshgate-2', 'p99') / m('nginx-auto', 'p99'), 2),
      shared_vs_reuseport_rps: round(rps('meshgate-2-shared') / rps('meshgate-2'), 2),
      // Node.js alone (node-floor.ts): the same figures for the least proxy Node.js can be.
      floor_two_vs_nginx_auto_rps: round(rps('node-floor-2') / rps('nginx-auto'), 2),
      floor_two_vs_nginx_auto_p99: round(m('node-floor-2', 'p99') / m('nginx-auto', 'p99'), 2),
      // Each rep runs the targets back to back, so a rep's own ratio shares its moment's load.
      two_workers_vs_nginx_auto_by_rep: (runs['meshgate-2'] ?? []).map((r, i) =>
        round(r.rps / (runs['nginx-auto']?.[i]?.rps ?? Number.NaN), 2),
      ),
      two_workers_vs_one_by_rep: (runs['meshgate-2'] ?? []).map((r, i) =>
        round(r.rps / (runs['meshgate-1']?.[i]?.rps ?? Number.NaN), 2),
      ),
      // This build against the baseline's (BENCH_BASELINE), per rep: CPU per request of one process and of two.
      cpu_vs_baseline_by_rep: ['1', '2'].map((n) =>
        (cpu[`meshgate-${n}`] ?? []).map((c, i) => round(c / (cpu[`base-meshgate-${n}`]?.[i] ?? Number.NaN), 2)),
      ),
    },
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  mkdirSync('.bench-out', { recursive: true });
  writeFileSync('.bench-out/proxy-workers.json', JSON.stringify(summary, null, 2));
}

runBench(main, stops);
