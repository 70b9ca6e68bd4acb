/**
 * What the gateway allocates, and collects, on an Arrow Flight read of a
 * PostgreSQL table: the gateway started with the inspector on loopback,
 * one uncounted read, then `reads` reads of the benchmark table (run.ts)
 * under V8's sampling heap profiler with the objects garbage collection
 * freed kept in the profile (DevTools protocol, HeapProfiler.startSampling:
 * includeObjectsCollectedByMajorGC / MinorGC), and the same reads again with
 * the collections counted (perf_hooks' `gc` entries, in the gateway). Prints
 * the allocation sites by bytes (each function's own allocations, its callers
 * merged), bytes per row, and the collections per kind with their time per
 * million rows. Writes the profile to BENCH_HEAP_PROFILE when set (a
 * .heapprofile DevTools opens). Never run by the test suite.
 *
 *   npx tsx bench/retrieval/flight-heap.ts [rows=3000000] [reads=2]
 *
 * BENCH_MESHGATE: another checkout's launcher (default this checkout's bin/meshgate); BENCH_GATEWAY_NODE_OPTIONS:
 * more Node flags for the gateway; BENCH_HEAP_SAMPLING=0 skips the profiler; BENCH_GC_LOG: a file for V8's
 * --trace-gc and --trace-incremental-marking lines; BENCH_CPU_PROFILE: a .cpuprofile of the counted reads;
 * BENCH_V8_FLAGS: V8 flags set in the gateway once it runs (v8.setFlagsFromString); BENCH_IDLE_MS: idle time before
 * each counted read.
 */
import { createWriteStream, writeFileSync } from 'node:fs';
import { flightGet, startFlightClient } from '../../test/helpers/flight.ts';
import { startPostgres } from '../../test/helpers/peers/postgres.ts';
import { type Cleanups, cpuSeconds, fillTable, startBenchGateway, threadCpu } from './gateway.ts';

const [rows = 3_000_000, reads = 2] = process.argv.slice(2).map(Number);
const INSPECTOR_PORT = 9000 + (process.pid % 1000);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 0);
const cleanups: Cleanups = [];
const after = { after: (fn: () => unknown) => cleanups.push(fn) };

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** A DevTools protocol session with the gateway (Node's global WebSocket). */
async function devtools(port: number) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const socket = new WebSocket(targets[0]?.webSocketDebuggerUrl as string);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let id = 0;
  const waiting = new Map<number, (result: any) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data));
    if (message.id !== undefined)
      waiting.get(message.id)?.(message.error ? Promise.reject(message.error) : message.result);
  };
  cleanups.push(() => socket.close());
  return (method: string, params: object = {}) =>
    new Promise<any>((resolve) => {
      waiting.set(++id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
}

/** Own bytes per function (name, file and line), over every path it was called on. */
function bySite(root: ProfileNode): [string, number][] {
  const sites = new Map<string, number>();
  const walk = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
    sites.set(key, (sites.get(key) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(root);
  return [...sites].sort((a, b) => b[1] - a[1]);
}

const GC_OBSERVER = `(() => {
  const { PerformanceObserver, constants } = process.getBuiltinModule('node:perf_hooks');
  const kinds = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
  };
  globalThis.__benchGc = {};
  globalThis.__benchGcObserver?.disconnect();
  globalThis.__benchGcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = kinds[e.detail.kind] ?? String(e.detail.kind);
      const k = (globalThis.__benchGc[kind] ??= { count: 0, ms: 0 });
      k.count++; k.ms += e.duration;
    }
  });
  globalThis.__benchGcObserver.observe({ entryTypes: ['gc'] });
})()`;

/** The sampling heap profiler over `reads` reads: the sites that allocated most, collected objects included. */
async function sampleHeap(call: (method: string, params?: object) => Promise<any>, read: () => Promise<void>) {
  await call('HeapProfiler.startSampling', {
    samplingInterval: 16384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  for (let r = 0; r < reads; r++) await read();
  const { profile } = await call('HeapProfiler.stopSampling');
  if (process.env.BENCH_HEAP_PROFILE) writeFileSync(process.env.BENCH_HEAP_PROFILE, JSON.stringify(profile));
  const sites = bySite(profile.head);
  const total = sites.reduce((n, [, bytes]) => n + bytes, 0);
  const perRow = (bytes: number) => (bytes / (rows * reads)).toFixed(2);
  const lines = [
    `sampled allocations: ${perRow(total)} bytes a row`,
    '| site | bytes a row | share |',
    '|---|---|---|',
  ];
  for (const [site, bytes] of sites.slice(0, 25))
    lines.push(`| ${site} | ${perRow(bytes)} | ${((100 * bytes) / total).toFixed(1)} % |`);
  return lines;
}

/** The counted reads, each after BENCH_IDLE_MS idle: as between a user's reads (V8's idle-time collections count). */
async function countedReads(read: () => Promise<void>): Promise<void> {
  for (let r = 0; r < reads; r++) {
    if (IDLE_MS > 0) await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    await read();
  }
}

async function main(): Promise<void> {
  const pg = await startPostgres(after, { settings: { shared_buffers: '256MB' } });
  await fillTable(pg, 'bench', rows);
  const gcLog = process.env.BENCH_GC_LOG;
  const gw = await startBenchGateway(
    cleanups,
    pg,
    process.env.BENCH_MESHGATE,
    `--inspect=127.0.0.1:${INSPECTOR_PORT} ${process.env.BENCH_GATEWAY_NODE_OPTIONS ?? ''}`.trim(),
  );
  // The gateway's stdout past its start: V8's --trace-gc lines, kept when asked for, else drained.
  const log = gcLog ? createWriteStream(gcLog) : null;
  gw.child.stdout?.on('data', (chunk: Buffer) => log?.write(chunk));
  gw.child.stdout?.resume();
  const call = await devtools(INSPECTOR_PORT);
  // V8 flags NODE_OPTIONS does not take, set in the running gateway (BENCH_V8_FLAGS: e.g. heap sizing heuristics).
  const v8Flags = process.env.BENCH_V8_FLAGS;
  if (v8Flags)
    await call('Runtime.evaluate', {
      expression: `process.getBuiltinModule('node:v8').setFlagsFromString(${JSON.stringify(v8Flags)})`,
    });
  if (gcLog)
    await call('Runtime.evaluate', {
      expression: "process.getBuiltinModule('node:v8').setFlagsFromString('--trace-gc --trace-incremental-marking')",
    });
  const flight = await startFlightClient(after, gw.ca);
  const urn = await gw.dataset('bench');
  const read = async () => {
    const job = await gw.api('POST', '/api/retrieval/jobs', {
      dataset_urn: urn,
      transport: 'grpc',
      grpc_protocol: 'arrow-flight',
    });
    const got = (await flight.get(flightGet(job, false))).rows;
    if (got !== rows) throw new Error(`${got} rows, want ${rows}`);
  };
  await read();

  const lines: string[] = [];
  if (process.env.BENCH_HEAP_SAMPLING !== '0') lines.push(...(await sampleHeap(call, read)));
  await call('Runtime.evaluate', { expression: GC_OBSERVER });
  const cpuProfile = process.env.BENCH_CPU_PROFILE;
  if (cpuProfile) await call('Profiler.enable').then(() => call('Profiler.start'));
  const threadsBefore = threadCpu(gw.pid);
  const cpu = cpuSeconds(gw.pid);
  await countedReads(read);
  const threadsAfter = threadCpu(gw.pid);
  if (cpuProfile) writeFileSync(cpuProfile, JSON.stringify((await call('Profiler.stop')).profile));
  const cpuPerM = ((cpuSeconds(gw.pid) - cpu) * 1e6) / (rows * reads);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const { result } = await call('Runtime.evaluate', {
    expression: 'JSON.stringify(globalThis.__benchGc)',
    returnByValue: true,
  });
  lines.push(
    '',
    `gateway CPU-s per M rows (no profiler): ${cpuPerM.toFixed(3)}`,
    '| collection | count per M rows | ms per M rows |',
    '|---|---|---|',
  );
  for (const [kind, { count, ms }] of Object.entries(
    JSON.parse(result.value) as Record<string, { count: number; ms: number }>,
  ))
    lines.push(
      `| ${kind} | ${((count * 1e6) / (rows * reads)).toFixed(1)} | ${((ms * 1e6) / (rows * reads)).toFixed(1)} |`,
    );
  lines.push('', '| thread | CPU-s per M rows |', '|---|---|');
  const byName = new Map<string, number>();
  for (const [tid, { name, seconds }] of threadsAfter) {
    const spent = seconds - (threadsBefore.get(tid)?.seconds ?? 0);
    byName.set(name, (byName.get(name) ?? 0) + spent);
  }
  for (const [name, seconds] of [...byName].sort((a, b) => b[1] - a[1]))
    if (seconds > 0) lines.push(`| ${name} | ${((seconds * 1e6) / (rows * reads)).toFixed(3)} |`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

try {
  await main();
} finally {
  for (const fn of cleanups.reverse()) await fn();
}
