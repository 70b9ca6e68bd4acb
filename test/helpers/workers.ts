/**
 * A multi-process gateway under test: the real `meshgate serve --workers N` (test/helpers/artifact.ts)
 * with its printed lines, its worker pids, access lines (which name the
 * worker that served each request id), and a bounded steady load over
 * HTTP/2 that counts what failed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'undici';
import { meshgateLaunch } from './artifact.ts';
import { alive } from './jobs.ts';
import { descendants, processes } from './processes.ts';
import { waitFor } from './wait.ts';

export const ADMIN_PASSWORD = 'workers-test-admin-pw';

export interface Served {
  readonly child: ChildProcess;
  readonly base: string;
  readonly ca: string;
  /** Everything printed on stdout so far. */
  output(): string;
  /** Resolves once stdout holds a line matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends the signal; resolves with the exit code once stdout has closed. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** SIGKILLs the primary and every process under it (workers, job supervisors); resolves once all have ended. */
  killTree(): Promise<void>;
}

export async function serveWorkers(
  dataDir: string,
  workers: number | 'auto',
  extraEnv: Record<string, string> = {},
): Promise<Served> {
  const args = ['--https-port', '0', '--workers', String(workers), '--log-level', 'info'];
  return serve(dataDir, args, { PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD, ...extraEnv });
}

/**
 * `meshgate serve --data-dir <dataDir> ...args` on the tests' target (test/helpers/artifact.ts); resolves once it
 * listens and has printed its origin.
 */
export async function serve(
  dataDir: string,
  args: readonly string[],
  extraEnv: Record<string, string>,
): Promise<Served> {
  const launch = meshgateLaunch(['serve', '--data-dir', dataDir, ...args], extraEnv);
  const child = spawn(launch.file, launch.args, { env: launch.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout?.on('data', (d) => {
    out += d;
    for (const wake of [...waiters]) wake();
  });
  child.stderr?.on('data', (d) => {
    err += d;
  });
  const waitForLine = (pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const line = out.split('\n').find((l) => pattern.test(l));
        if (line === undefined) return;
        cleanup();
        resolve(line);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(
            `no line ${pattern} in ${timeoutMs} ms; stdout:\n${out.slice(-4000)}\nstderr:\n${err.slice(-2000)}`,
          ),
        );
      }, timeoutMs);
      const onExit = () => {
        cleanup();
        reject(new Error(`serve exited before ${pattern}; stdout:\n${out.slice(-4000)}\nstderr:\n${err.slice(-2000)}`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
        child.off('exit', onExit);
      };
      waiters.add(check);
      child.once('exit', onExit);
      check();
    });
  const listening = await waitForLine(/^meshgate listening https:/);
  const port = /:(\d+)$/.exec(listening)?.[1];
  await waitForLine(/^meshgate origin /);
  return {
    child,
    base: `https://localhost:${port}`,
    ca: readFileSync(join(dataDir, 'tls', 'ca.pem'), 'utf8'),
    output: () => out,
    waitForLine,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('close', (code) => resolve(code));
        child.kill(signal);
      }),
    killTree: async () => {
      const pids = [...descendants(child.pid as number).map((p) => p.pid), child.pid as number];
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // ended meanwhile
        }
      }
      await waitFor(() => child.exitCode !== null || child.signalCode !== null, { what: 'the primary to end' });
      await waitFor(() => !pids.some(alive), { what: `processes ${pids.join(', ')} to end` });
    },
  };
}

/**
 * A temp dir for one test, and `serve --workers` on it (or on a folder inside). When the test ends every process
 * started is killed and waited for, then the dir is removed, in one after hook: node runs a test's after hooks in the
 * order they were added and skips the rest once one throws, and a removal racing a live worker's writes can throw.
 */
export function workersScratch(t: { after(fn: () => unknown): void }, prefix = 'meshgate-workers-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const started: Served[] = [];
  t.after(async () => {
    for (const served of started) await served.killTree();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  const serve = async (workers: number, env: Record<string, string> = {}, dataDir = dir) => {
    const served = await serveWorkers(dataDir, workers, env);
    started.push(served);
    return served;
  };
  return { dir, serve };
}

/** A loopback port free a moment ago, for a listener the gateway binds itself (a legacy or admin port). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Live processes whose parent is `parent` and that run meshgate (job processes are the primary's children too). */
export function workerPids(parent: number): number[] {
  // A worker runs the primary's own script: the executable, the bundle from bin/meshgate, or app/cli/main.ts.
  const script = primaryScript(parent);
  if (script === undefined) return [];
  return processes()
    .filter((p) => p.parent === parent && !p.zombie && commandLine(p.pid).includes(script))
    .map((p) => p.pid);
}

function commandLine(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return []; // gone meanwhile
  }
}

function primaryScript(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .find((arg) => /meshgate\.mjs$|main\.ts$|\/meshgate$/.test(arg));
  } catch {
    return undefined; // the primary has ended
  }
}

/** The worker pid the access log names for a request id, once its line is out (lines are flushed each second). */
export async function servedBy(served: Served, requestId: string): Promise<number> {
  const line = await served.waitForLine(new RegExp(`"req_id":"${requestId}"`), 5000);
  return (JSON.parse(line) as { worker: number }).worker;
}

/** One HTTP/2 connection to the gateway, with a request that names its request id. */
export function connection(served: Served) {
  const client = new Client(served.base, { allowH2: true, connect: { ca: served.ca } });
  const call = async (method: string, path: string, options: { token?: string; json?: unknown } = {}) => {
    const requestId = randomUUID();
    const headers: Record<string, string> = { 'x-request-id': requestId };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.json !== undefined) headers['content-type'] = 'application/json';
    const res = await client.request({
      method: method as 'GET',
      path,
      headers,
      body: options.json === undefined ? undefined : JSON.stringify(options.json),
    });
    const text = await res.body.text();
    return { status: res.statusCode, text, json: text ? JSON.parse(text) : null, requestId };
  };
  return { client, call, close: () => client.close() };
}

export async function adminToken(served: Served): Promise<string> {
  const conn = connection(served);
  try {
    const res = await conn.client.request({
      method: 'POST',
      path: '/api/auth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: 'admin', password: ADMIN_PASSWORD, grant_type: 'password' }).toString(),
    });
    const body = (await res.body.json()) as { access_token: string };
    return body.access_token;
  } finally {
    await conn.close();
  }
}

export interface LoadResult {
  ok: number;
  failed: number;
  /** Failures that were a reset stream or connection (RST_STREAM, ECONNRESET, a socket closed mid-request). */
  resets: number;
  errors: string[];
}

/** One GET of `path`, counted into `result`: 200 is ok, anything else (or a throw) failed. */
async function getOnce(client: Client, path: string, headers: Record<string, string>, result: LoadResult) {
  try {
    const res = await client.request({ method: 'GET', path, headers });
    await res.body.dump();
    if (res.statusCode === 200) result.ok += 1;
    else {
      result.failed += 1;
      result.errors.push(`status ${res.statusCode}`);
    }
  } catch (error) {
    result.failed += 1;
    const text = `${(error as NodeJS.ErrnoException).code ?? ''} ${(error as Error).message}`;
    if (/RST|reset|ECONNRESET|UND_ERR_SOCKET|closed/i.test(text)) result.resets += 1;
    if (result.errors.length < 20) result.errors.push(text);
  }
}

export interface LoadOptions {
  connections: number;
  streams: number;
  http1?: number;
  maxRequests: number;
  maxMs: number;
  /** What each request GETs (default /api/ping), with this bearer token when given. */
  path?: string;
  token?: string;
}

/**
 * A steady load: `connections` HTTP/2 connections, each with `streams` request loops on GET `path`, and
 * `http1` HTTP/1.1 keep-alive connections with one loop each, until stop() or a bound (`maxRequests`, `maxMs`) is
 * reached. A request that throws or answers other than 200 fails.
 */
export function steadyLoad(served: Pick<Served, 'base' | 'ca'>, options: LoadOptions) {
  const path = options.path ?? '/api/ping';
  const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const result: LoadResult = { ok: 0, failed: 0, resets: 0, errors: [] };
  let running = true;
  const deadline = Date.now() + options.maxMs;
  const client = (allowH2: boolean) => new Client(served.base, { allowH2, connect: { ca: served.ca } });
  const h2 = Array.from({ length: options.connections }, () => client(true));
  const h1 = Array.from({ length: options.http1 ?? 0 }, () => client(false));
  const clients = [...h2, ...h1];
  const loop = async (client: Client) => {
    while (running && Date.now() < deadline && result.ok + result.failed < options.maxRequests) {
      await getOnce(client, path, headers, result);
    }
  };
  const loops = [...h2.flatMap((c) => Array.from({ length: options.streams }, () => loop(c))), ...h1.map(loop)];
  let stopped: Promise<LoadResult> | null = null;
  const stop = async () => {
    running = false;
    await Promise.all(loops);
    await Promise.all(clients.map((c) => c.close()));
    return result;
  };
  return {
    result,
    /** Ends the loops and closes the connections; a second call waits for the first. */
    stop(): Promise<LoadResult> {
      stopped ??= stop();
      return stopped;
    },
  };
}

/** Resolves once `ok` has grown by `count` requests (the load is flowing), or fails after `timeoutMs`. */
export async function untilServed(result: LoadResult, count: number, timeoutMs = 20_000): Promise<void> {
  const target = result.ok + count;
  const deadline = Date.now() + timeoutMs;
  while (result.ok < target) {
    if (Date.now() > deadline)
      throw new Error(`the load did not reach ${count} more answers: ${JSON.stringify(result)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
