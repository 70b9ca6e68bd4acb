/**
 * The peers and probes the proxy benchmarks share: the bench upstream,
 * nginx, Caddy and HAProxy as child processes, wrk runs, CPU and RSS from /proc.
 */
import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const REPS = Number(process.env.BENCH_REPS ?? 3);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const here = import.meta.dirname;
export const STREAM_MB = 512;
/** A proxy under measurement: where it listens, its main process, and the processes whose RSS is a worker's. */
export interface Target {
  url: string;
  pid: number;
  token?: string;
  /** meshgate: its workers, or itself as one process; nginx: its workers; others: themselves. */
  workers(): number[];
}

/** Every process a benchmark started, stopped when it ends. */
export const children: ChildProcess[] = [];

/**
 * Forks a bench script and waits for its first message. By default under tsx; `execArgv` replaces that (a script
 * Node.js runs itself, by its type stripping), `env` the inherited environment, `stdout` a file descriptor for its
 * standard output (inherited by default).
 */
export function child<T>(
  file: string,
  args: string[],
  options: { execArgv?: string[]; env?: NodeJS.ProcessEnv; stdout?: number } = {},
): Promise<{ proc: ChildProcess; hello: T }> {
  const proc = fork(join(here, file), args, {
    execArgv: options.execArgv ?? ['--import', 'tsx'],
    env: options.env ?? process.env,
    stdio: ['ignore', options.stdout ?? 'inherit', 'inherit', 'ipc'],
  });
  children.push(proc);
  return new Promise((resolve, reject) => {
    proc.once('message', (hello) => resolve({ proc, hello: hello as T }));
    proc.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
  });
}

export function rssBytes(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startNginx(
  upstreamPort: number,
  workers: number | 'auto' = 1,
): Promise<{ url: string; pid: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-nginx-'));
  mkdirSync(join(dir, 'logs'));
  const port = await freePort();
  const user = process.getuid?.() === 0 ? 'user root;' : '';
  writeFileSync(
    join(dir, 'nginx.conf'),
    `${user} worker_processes ${workers}; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log ${dir}/logs/access.log; client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/f; uwsgi_temp_path ${dir}/u; scgi_temp_path ${dir}/s;
  upstream bench { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://bench; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off;
      proxy_set_header X-Forwarded-For $remote_addr; proxy_set_header X-Forwarded-Proto $scheme;
    }
  }
}`,
  );
  const proc = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'logs/error.log')], {
    stdio: 'inherit',
  });
  children.push(proc);
  proc.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (let i = 0; i < 50; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const ok = await new Promise<boolean>((resolve) =>
      connect(port, '127.0.0.1')
        .once('connect', function (this: import('node:net').Socket) {
          this.destroy();
          resolve(true);
        })
        .once('error', () => resolve(false)),
    );
    if (ok) return { url: `http://127.0.0.1:${port}`, pid: proc.pid as number };
  }
  throw new Error('nginx did not start');
}

/** CPU µs of a process (all its threads) and its children (nginx master + worker), from /proc. */
/** The pids of a process's children (nginx's workers, meshgate's workers). */
export function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

export function procCpuMicros(pid: number): number {
  const ticks = (p: number) => {
    const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return Number(fields[11]) + Number(fields[12]);
  };
  const kids = childrenOf(pid);
  return ((ticks(pid) + kids.reduce((sum, k) => sum + ticks(k), 0)) * 1e6) / 100; // USER_HZ = 100
}

/** The preload that makes a Node.js process trace its collections (gc-trace.mjs), for NODE_OPTIONS. */
export const GC_TRACE_IMPORT = `--import=${join(here, 'gc-trace.mjs')}`;

/**
 * V8's heap allocation written to `file` (a process's stdout under gc-trace.mjs, its workers' too) from byte `from`
 * on: the sum of every collection's `allocated=` (bytes allocated since the collection before), and where its last
 * whole line ends, the next measurement's start. What is allocated after the last collection counts in the next
 * run; with a 4 MiB semi-space a run holds hundreds of collections, so the edges weigh about 1 %.
 */
export function gcAllocatedBytes(file: string, from: number): { bytes: number; end: number } {
  const end = statSync(file).size;
  const buffer = Buffer.alloc(end - from);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, from);
  } finally {
    closeSync(fd);
  }
  // Up to the last whole line: the rest is still being written (V8 prints through C's buffered stdout, so a run's
  // last few lines may come with the next one's; the same lag at both ends of a run).
  const text = buffer.toString('latin1', 0, buffer.lastIndexOf(10) + 1);
  let bytes = 0;
  for (const match of text.matchAll(/ gc=\S+ .*? allocated=(\d+) /g)) bytes += Number(match[1]);
  return { bytes, end: from + text.length };
}

export interface WrkResult {
  wrkCpuSeconds: number;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
}

function toMs(text: string): number {
  const m = /([\d.]+)(us|ms|s)/.exec(text);
  if (!m) return Number.NaN;
  return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
}

/** One wrk run; bash's `times` after it gives wrk's own CPU (it shares the cores with what it measures). */
export function wrk(url: string, token?: string): WrkResult {
  const args = [
    '-t2',
    `-c${CONNECTIONS}`,
    `-d${SECONDS}s`,
    '--latency',
    ...(token ? ['-H', `Authorization: Bearer ${token}`] : []),
    url,
  ];
  const out = execFileSync('bash', ['-c', 'wrk "$@"; times', 'wrk', ...args], { encoding: 'utf8' });
  const [user, sys] = [...(out.trim().split('\n').at(-1) ?? '').matchAll(/(\d+)m([\d.]+)s/g)].map(
    (m) => Number(m[1]) * 60 + Number(m[2]),
  );
  return {
    wrkCpuSeconds: (user ?? 0) + (sys ?? 0),
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50: toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99: toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    requests: Number(/(\d+) requests in/.exec(out)?.[1]),
    errors:
      Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) +
      Number(/Socket errors: .*?(\d+) timeout/.exec(out)?.[1] ?? 0),
  };
}

export function curlMBps(url: string, token?: string): number {
  const args = [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{speed_download}',
    ...(token ? ['-H', `Authorization: Bearer ${token}`] : []),
    `${url}/stream?mb=${STREAM_MB}`,
  ];
  return Number(execFileSync('curl', args, { encoding: 'utf8' })) / 1e6;
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

export function round(x: number, digits = 1): number {
  return Number(x.toFixed(digits));
}

/**
 * Runs a benchmark, then stops what it started: `stops` first, last registered first (a gateway before the database
 * it uses), each awaited; then every child process.
 */
export function runBench(main: () => Promise<void>, stops: readonly (() => unknown)[] = []): void {
  main()
    .catch((error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exitCode = 1;
    })
    .finally(async () => {
      for (const stop of [...stops].reverse()) await stop();
      for (const c of children) {
        if (c.connected) c.disconnect();
        else c.kill('SIGTERM');
      }
    });
}

/** Resolves once `GET /hello` on the port answers. */
export async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/hello`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`nothing answered on ${port}`);
}

function tempDir(name: string, stops: (() => void)[]): string {
  const dir = mkdtempSync(join(tmpdir(), `bench-${name}-`));
  stops.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Caddy 2 as a reverse proxy with its access log to a file (as nginx's and meshgate's). */
export async function startCaddy(upstreamPort: number, stops: (() => void)[]): Promise<Target> {
  const dir = tempDir('caddy', stops);
  const port = await freePort();
  writeFileSync(
    join(dir, 'Caddyfile'),
    `{\n  admin off\n  auto_https off\n  storage file_system ${dir}\n}\n:${port} {\n  bind 127.0.0.1\n` +
      `  log {\n    output file ${dir}/access.log\n  }\n  reverse_proxy 127.0.0.1:${upstreamPort}\n}\n`,
  );
  const proc = spawn('caddy', ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
    stdio: 'ignore',
    env: { ...process.env, HOME: dir },
  });
  children.push(proc);
  await waitForPort(port);
  return { url: `http://127.0.0.1:${port}`, pid: proc.pid as number, workers: () => [proc.pid as number] };
}

/** HAProxy in HTTP mode, one thread per core (its default), upstream connections reused. */
export async function startHaproxy(upstreamPort: number, stops: (() => void)[]): Promise<Target> {
  const dir = tempDir('haproxy', stops);
  const port = await freePort();
  writeFileSync(
    join(dir, 'haproxy.cfg'),
    `global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n` +
      `  timeout client 30s\n  timeout server 30s\n  option http-keep-alive\n` +
      `frontend web\n  bind 127.0.0.1:${port}\n  default_backend app\n` +
      `backend app\n  http-reuse always\n  server up 127.0.0.1:${upstreamPort}\n`,
  );
  const proc = spawn('haproxy', ['-f', join(dir, 'haproxy.cfg'), '-db'], { stdio: 'ignore' });
  children.push(proc);
  await waitForPort(port);
  return { url: `http://127.0.0.1:${port}`, pid: proc.pid as number, workers: () => [proc.pid as number] };
}
