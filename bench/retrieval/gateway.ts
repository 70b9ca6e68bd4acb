/**
 * A meshgate started as shipped for the retrieval benchmarks (run.ts,
 * pair.ts): its own process (`bin/meshgate serve`, or another checkout's
 * launcher), logged in as the bootstrap admin, with the PostgreSQL tables
 * of the benchmark registered as datasets; and the process's CPU seconds
 * and RSS from /proc.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import type { PostgresPeer } from '../../test/helpers/peers/postgres.ts';

const PASSWORD = 'bench-admin-password';
const ROOT = join(import.meta.dirname, '..', '..');

export type Cleanups = (() => unknown)[];

export interface BenchGateway {
  readonly url: string;
  readonly ca: string;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly agent: Agent;
  readonly token: string;
  /** A JSON API call as the admin. */
  api(method: string, path: string, body?: unknown): Promise<any>;
  /** The dataset URN of a table of `pg`, registered on first use. */
  dataset(table: string): Promise<string>;
}

/**
 * `launcher` defaults to this checkout's bin/meshgate; `nodeOptions` are Node
 * flags for the gateway alone (e.g. `--cpu-prof --cpu-prof-dir=…`, written
 * when it exits: the cleanup waits for the exit).
 */
export async function startBenchGateway(
  cleanups: Cleanups,
  pg: PostgresPeer,
  launcher = join(ROOT, 'bin', 'meshgate'),
  nodeOptions?: string,
): Promise<BenchGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-bench-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  // As shipped: the launcher's Node flags and malloc settings apply (bench/README.md, proxy).
  const child = spawn(launcher, ['serve', '--data-dir', dataDir, '--https-port', '0', '--log-level', 'warn'], {
    env: {
      ...process.env,
      PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: PASSWORD,
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.push(() => {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    return Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
  });
  let url: string | null = null;
  for await (const line of createInterface({ input: child.stdout as NodeJS.ReadableStream })) {
    const match = /meshgate listening (https:\/\/\S+)/.exec(line);
    if (match) {
      url = `https://localhost:${new URL(match[1] as string).port}`;
      break;
    }
  }
  if (url === null) throw new Error('gateway did not start');
  const base = url;
  const ca = readFileSync(join(dataDir, 'tls', 'ca.pem'), 'utf8');
  const agent = new Agent({ connect: { ca } });
  cleanups.push(() => agent.close());
  const login = await request(`${base}/api/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `username=admin&password=${PASSWORD}`,
    dispatcher: agent,
  });
  const token = ((await login.body.json()) as { access_token: string }).access_token;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await request(`${base}${path}`, {
      method: method as 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher: agent,
    });
    return res.body.json() as Promise<any>;
  };
  let secret: Promise<string> | null = null;
  const datasets = new Map<string, Promise<string>>();
  const dataset = (table: string) => {
    secret ??= api('POST', '/api/catalog/secrets/', {
      name: 'bench-pg',
      value: JSON.stringify({ user: pg.user, password: pg.password }),
    });
    const urn =
      datasets.get(table) ??
      secret.then((secretUrn) =>
        api('POST', '/api/catalog/datasets/', {
          name: table,
          platform: 'postgres',
          properties: { host: pg.host, port: pg.port, database: pg.database, secret_urn: secretUrn },
        }),
      );
    datasets.set(table, urn);
    return urn;
  };
  return { url: base, ca, pid: child.pid as number, child, agent, token, api, dataset };
}

/** The benchmark table `(id int, region text, amount int, note text)` of `n` rows. */
export async function fillTable(pg: PostgresPeer, table: string, n: number): Promise<void> {
  await pg.psql(
    `CREATE TABLE ${table} (id int, region text, amount int, note text);
      INSERT INTO ${table} SELECT i, (ARRAY['north','south','east'])[i % 3 + 1], (i * 37) % ` +
      `1000, 'row-' || i FROM generate_series(1, ${n}) i;`,
  );
  await pg.psql(`VACUUM ANALYZE ${table}`);
}

/** `psql -c <query> -o /dev/null` against `pg`: the reference reader, COPY to nowhere. */
export function psqlToNowhere(pg: PostgresPeer, query: string): Promise<unknown> {
  const connection = ['-h', pg.host, '-p', String(pg.port), '-U', pg.user, '-d', pg.database];
  return promisify(execFile)(join(pg.binDir, 'psql'), [...connection, '-c', query, '-o', '/dev/null'], {
    env: { ...process.env, PGPASSWORD: pg.password },
  });
}

export function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  return Number(line?.[1] ?? 0) / 1024;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** A process's CPU seconds from /proc/<pid>/stat (fields 14–17, counted after the command name): its own user and
 * system time, and that of its children it has waited for. */
function cpuTimes(pid: number | 'self'): { own: number; waited: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const [utime, stime, cutime, cstime] = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, 15)
    .map(Number);
  return { own: ((utime ?? 0) + (stime ?? 0)) / CLOCK_TICKS, waited: ((cutime ?? 0) + (cstime ?? 0)) / CLOCK_TICKS };
}

/**
 * The process's minor page faults so far (/proc/<pid>/stat field 10): pages first touched. A buffer that is a
 * fresh mmap each time (glibc's mmap threshold, bench/README.md retrieval) faults in every one of its pages.
 */
export function minorFaults(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[7]);
}

/** Each thread's name and user + system CPU seconds (/proc/<pid>/task/<tid>/stat). */
export function threadCpu(pid: number): Map<string, { name: string; seconds: number }> {
  const threads = new Map<string, { name: string; seconds: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const [utime, stime] = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .slice(11, 13)
      .map(Number);
    threads.set(tid, { name, seconds: ((utime ?? 0) + (stime ?? 0)) / CLOCK_TICKS });
  }
  return threads;
}

/**
 * CPU seconds of the process's V8 helper threads (`V8Worker`: concurrent marking and sweeping, parallel scavenges,
 * compiling).
 */
export function v8HelperSeconds(pid: number): number {
  let seconds = 0;
  for (const thread of threadCpu(pid).values()) if (thread.name === 'V8Worker') seconds += thread.seconds;
  return seconds;
}

/** User + system CPU seconds the process has used. */
export function cpuSeconds(pid: number): number {
  return cpuTimes(pid).own;
}

/**
 * CPU seconds of a process, of its waited-for children and of its live descendants; 0 for a process gone. Its
 * children are listed before its own times are read, so a child reaped in between is counted once, in the cutime.
 */
export function treeCpuSeconds(pid: number): number {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    const { own, waited } = cpuTimes(pid);
    return own + waited + children.reduce((sum, child) => sum + treeCpuSeconds(Number(child)), 0);
  } catch {
    return 0;
  }
}

/** CPU seconds of this process's children it has waited for: a psql run by execFile. */
export function waitedChildrenCpuSeconds(): number {
  return cpuTimes('self').waited;
}

export async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { value, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}
