/**
 * bench/proxy/streams.ts: many concurrent SSE token streams from one client address, the way a model is used, one
 * run, same box. The upstream (sse-upstream.ts) sends 60 chunks 50 ms apart per stream, each stamped with when it
 * was written. N concurrent streams (BENCH_STREAMS, default 500,2000) go through each target in rotating order:
 * directly, meshgate on defaults as one process and with `--workers 2`, the Node.js floor (node-floor.ts: the least
 * reverse proxy Node.js can be, one process, a pool without a bound), nginx (`worker_processes auto`), HAProxy,
 * and Caddy when it is installed. Reported per target and N: first-byte p50/p99, chunk delay p99 (write to
 * arrival) and what it adds over direct, CPU per stream-second (every process of the target), RSS per open stream
 * (its workers' RSS mid-stream less before), streams completed and errors.
 *
 * Then failover: meshgate in front of three replicas under a steady load of short GETs; one replica is killed with
 * SIGKILL, then started again on its port. Reported: failed requests (the target is 0: GETs are retried), and how
 * long after its restart the replica answered again.
 *
 *   npx tsx bench/proxy/streams.ts     (env: BENCH_STREAMS=500,2000 BENCH_TARGETS=meshgate-1,nginx)
 *
 * Each target is warmed first with BENCH_WARMUP bursts (default 3) of 500 one-chunk streams at once: the rounds then
 * measure processes that have served, not code V8 has yet to compile. The upstream is then restarted on its port,
 * which closes every upstream connection a proxy pooled (each starts the rounds with none, as nginx's 64 kept-alive
 * ones are too few for a round anyway), and warmed again directly. BENCH_WARMUP=0 measures the first burst after
 * start instead.
 *
 * BENCH_BASELINE=<another checkout, built> adds base-meshgate-1 and base-meshgate-2, that checkout's bin/meshgate,
 * to the rotation (a change against main's build in the same run).
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { startMeshgate } from './meshgate.ts';
import {
  child,
  childrenOf,
  freePort,
  procCpuMicros,
  round,
  rssBytes,
  runBench,
  startCaddy,
  startHaproxy,
  startNginx,
  type Target,
} from './peers.ts';

const STREAMS = (process.env.BENCH_STREAMS ?? '500,2000').split(',').filter(Boolean).map(Number);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const WARMUP_STREAMS = 500;
const CHUNKS = 60;
const GAP_MS = 50;
const STREAM_SECONDS = (CHUNKS * GAP_MS) / 1000;
const stops: (() => unknown)[] = [];
const now = () => performance.timeOrigin + performance.now();

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

interface StreamRun {
  firstByte: number[];
  delays: number[];
  done: number;
  errors: number;
  wallSeconds: number;
  cpuUsPerStreamSecond: number;
  rssKbPerStream: number;
}

/** One stream: time to first byte, and each chunk's delay from its write upstream to its arrival here. */
async function stream(agent: Agent, url: string, token: string | undefined, run: StreamRun): Promise<void> {
  const started = now();
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const res = await request(`${url}/v1/stream?n=${CHUNKS}&ms=${GAP_MS}`, { dispatcher: agent, headers });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`status ${res.statusCode}`);
  }
  let first = true;
  for await (const chunk of res.body) {
    const arrived = now();
    if (first) run.firstByte.push((arrived - started) / 1000);
    first = false;
    for (const m of String(chunk).matchAll(/"at":([\d.]+)/g)) run.delays.push(arrived - Number(m[1]));
  }
}

/** WARMUP bursts of WARMUP_STREAMS one-chunk streams at once, each read to its end. */
async function warm(target: Target): Promise<void> {
  const agent = new Agent({ connections: null, pipelining: 1 });
  const headers = target.token ? { authorization: `Bearer ${target.token}` } : {};
  const one = async () => {
    const res = await request(`${target.url}/v1/stream?n=1&ms=${GAP_MS}`, { dispatcher: agent, headers });
    await res.body.dump();
  };
  for (let burst = 0; burst < WARMUP; burst++) await Promise.all(Array.from({ length: WARMUP_STREAMS }, one));
  await agent.close();
}

async function streams(target: Target, n: number): Promise<StreamRun> {
  const agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 10_000, headersTimeout: 120_000 });
  const run: StreamRun = {
    firstByte: [],
    delays: [],
    done: 0,
    errors: 0,
    wallSeconds: 0,
    cpuUsPerStreamSecond: 0,
    rssKbPerStream: 0,
  };
  const rssOf = () => target.workers().reduce((sum, pid) => sum + rssBytes(pid), 0);
  const idleRss = rssOf();
  const cpuBefore = procCpuMicros(target.pid);
  const started = performance.now();
  let peakRss = idleRss;
  // RSS while the streams are open: sampled through their middle second.
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssOf());
  }, 250);
  await Promise.all(
    Array.from({ length: n }, () =>
      stream(agent, target.url, target.token, run).then(
        () => {
          run.done++;
        },
        () => {
          run.errors++;
        },
      ),
    ),
  );
  clearInterval(sampler);
  run.wallSeconds = (performance.now() - started) / 1000;
  run.cpuUsPerStreamSecond = (procCpuMicros(target.pid) - cpuBefore) / (n * STREAM_SECONDS);
  run.rssKbPerStream = Math.max(0, peakRss - idleRss) / 1024 / n;
  await agent.close();
  return run;
}

async function meshgate(upstream: string, workers: number, checkout?: string): Promise<Target & { base: string }> {
  const gateway = await startMeshgate(upstream, await freePort(), ['--workers', String(workers)], {}, checkout);
  stops.push(gateway.stop);
  const pids = () => (workers === 1 ? [gateway.pid] : childrenOf(gateway.pid));
  return { url: gateway.url, pid: gateway.pid, token: gateway.token, workers: pids, base: gateway.base };
}

/** node-floor.ts with the launcher's memory settings, run by Node.js itself, its upstream pool unbounded. */
async function nodeFloor(upstream: string): Promise<Target> {
  const port = await freePort();
  const { proc } = await child('node-floor.ts', [upstream, String(port), '1', '1000000'], {
    execArgv: ['--max-semi-space-size=4', '--disable-warning=ExperimentalWarning'],
    env: { ...process.env, MALLOC_ARENA_MAX: '1', MALLOC_TRIM_THRESHOLD_: '131072' },
  });
  const pid = proc.pid as number;
  return { url: `http://127.0.0.1:${port}`, pid, workers: () => [pid] };
}

function installed(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Three replicas behind meshgate; one killed with SIGKILL under load, then restarted on its port. */
async function failover(): Promise<Record<string, number>> {
  const replicas = await Promise.all(
    ['r1', 'r2', 'r3'].map((name) => child<{ port: number }>('sse-upstream.ts', [name])),
  );
  const urls = replicas.map((r) => `http://127.0.0.1:${r.hello.port}`);
  const gateway = await meshgate(urls[0] as string, 1);
  const id = gateway.url.split('/').at(-1);
  await fetch(`${gateway.base}/api/serving/deployments/${id}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${gateway.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ upstreams: urls.map((url) => ({ url })) }),
  });
  const agent = new Agent({ connections: 64 });
  const result = { requests: 0, failed: 0, restarted_answering_ms: Number.NaN };
  let restartedAt = 0;
  const deadline = performance.now() + 9000;
  const loop = async () => {
    while (performance.now() < deadline) {
      try {
        const res = await request(`${gateway.url}/hello`, {
          dispatcher: agent,
          headers: { authorization: `Bearer ${gateway.token}` },
        });
        await res.body.dump();
        result.requests++;
        if (res.statusCode !== 200) result.failed++;
        if (restartedAt && res.headers['x-replica'] === 'r3' && Number.isNaN(result.restarted_answering_ms))
          result.restarted_answering_ms = Math.round(performance.now() - restartedAt);
      } catch {
        result.failed++;
      }
    }
  };
  const load = Promise.all(Array.from({ length: 32 }, loop));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  replicas[2]?.proc.kill('SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await child('sse-upstream.ts', ['r3', String(replicas[2]?.hello.port)]);
  restartedAt = performance.now();
  await load;
  await agent.close();
  return result;
}

/** One size's runs, per target; chunk delay also as what it adds over direct's. */
function summarized(names: string[], runs: Record<string, StreamRun>): Record<string, unknown> {
  const directDelay = percentile(runs.direct?.delays ?? [], 99);
  return Object.fromEntries(
    names.map((name) => {
      const r = runs[name] as StreamRun;
      const delayP99 = percentile(r.delays, 99);
      return [
        name,
        {
          first_byte_p50_s: round(percentile(r.firstByte, 50), 3),
          first_byte_p99_s: round(percentile(r.firstByte, 99), 3),
          chunk_delay_p99_ms: round(delayP99, 2),
          added_chunk_delay_p99_ms: round(delayP99 - directDelay, 2),
          cpu_us_per_stream_second: round(r.cpuUsPerStreamSecond),
          rss_kb_per_open_stream: round(r.rssKbPerStream),
          done: r.done,
          errors: r.errors,
          wall_s: round(r.wallSeconds, 2),
        },
      ];
    }),
  );
}

type Upstream = Awaited<ReturnType<typeof child<{ port: number }>>>;

/** The upstream killed and started again on its port: every connection a proxy kept to it is closed. */
async function restarted(upstream: Upstream, port: number): Promise<Upstream> {
  upstream.proc.kill('SIGKILL');
  await once(upstream.proc, 'exit');
  return child<{ port: number }>('sse-upstream.ts', ['direct', String(port)]);
}

/**
 * Every target warmed, then the upstream restarted (no proxy keeps an upstream connection into the rounds) and
 * warmed directly; the upstream as it now runs.
 */
async function warmed(targets: Record<string, Target>, upstream: Upstream, port: number): Promise<Upstream> {
  for (const target of Object.values(targets)) await warm(target);
  const again = await restarted(upstream, port);
  const pid = again.proc.pid as number;
  if (targets.direct) targets.direct.pid = pid;
  await warm({ url: `http://127.0.0.1:${port}`, pid, workers: () => [] });
  return again;
}

async function main(): Promise<void> {
  let upstream = await child<{ port: number }>('sse-upstream.ts', ['direct']);
  const port = upstream.hello.port;
  const upstreamUrl = `http://127.0.0.1:${port}`;
  const baseline = process.env.BENCH_BASELINE;
  const starts: Record<string, () => Promise<Target>> = {
    direct: async () => ({ url: upstreamUrl, pid: upstream.proc.pid as number, workers: () => [] }),
    'meshgate-1': () => meshgate(upstreamUrl, 1),
    'meshgate-2': () => meshgate(upstreamUrl, 2),
    ...(baseline && {
      'base-meshgate-1': () => meshgate(upstreamUrl, 1, baseline),
      'base-meshgate-2': () => meshgate(upstreamUrl, 2, baseline),
    }),
    'node-floor-1': () => nodeFloor(upstreamUrl),
    nginx: async () => {
      const started = await startNginx(port, 'auto');
      return { url: started.url, pid: started.pid, workers: () => childrenOf(started.pid) };
    },
    haproxy: () => startHaproxy(port, stops),
    ...(installed('caddy') && { caddy: () => startCaddy(port, stops) }),
  };
  const only = process.env.BENCH_TARGETS?.split(',');
  const targets: Record<string, Target> = {};
  for (const [name, start] of Object.entries(starts)) if (!only || only.includes(name)) targets[name] = await start();
  const names = Object.keys(targets);
  if (WARMUP > 0) upstream = await warmed(targets, upstream, port);
  const results: Record<string, Record<string, unknown>> = {};
  for (const [round_, n] of STREAMS.entries()) {
    const shift = round_ % names.length;
    const runs: Record<string, StreamRun> = {};
    for (const name of [...names.slice(shift), ...names.slice(0, shift)]) {
      runs[name] = await streams(targets[name] as Target, n);
      const r = runs[name];
      process.stderr.write(`${n} streams ${name.padEnd(11)} done ${r.done} errors ${r.errors} ${r.wallSeconds}s\n`);
    }
    // A size given again (BENCH_STREAMS=500,500) is another round of it: `500`, then `500#2`.
    const key = String(n) in results ? `${n}#${round_ + 1}` : String(n);
    results[key] = summarized(names, runs);
  }
  const summary = { streams: results, failover: only && !only.includes('failover') ? null : await failover() };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  mkdirSync('.bench-out', { recursive: true });
  writeFileSync('.bench-out/proxy-streams.json', JSON.stringify(summary, null, 2));
}

runBench(main, stops);
