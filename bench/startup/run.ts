/**
 * Start to serving, idle memory and what ships, for meshgate as it was run
 * before the bundle (Node + tsx over the sources), as bin/meshgate runs it
 * now (the esbuild bundle), as the single executable (dist/meshgate), and
 * for Caddy as the peer — all in the same run, on loopback.
 *
 * Each start is timed from spawn to the first HTTPS 200 (meshgate's
 * /api/ping, Caddy's static response), polled every 5 ms over TLS verified
 * against the platform CA; Caddy serves meshgate's own server certificate, so
 * both do the same handshake. The first start of each target (creating the
 * data dir, extracting the executable's files, Caddy's first config) is not
 * counted: the figures are warm starts. Idle RSS is VmRSS 2 s after serving,
 * with its anonymous (heap, stacks) and file-backed (the executable's pages)
 * parts.
 *
 * The targets take turns (one start of each, then the next round), so a
 * change in the shared host's load falls on all of them alike.
 * BENCH_BASELINE=<another build's dist/meshgate> adds that executable as a
 * target beside this one: how a change moved the figures, in one run.
 *
 * The executable's file-backed pages depend on the page cache, not on the
 * bench: a start maps not only the pages it touches but the cached pages
 * around each one (the kernel's fault-around, whole large folios), so the
 * same executable reads ~5 MB less when its start reads it from disk (no
 * neighbours cached yet) than on every later start, and ~30 MB more after
 * the file was read whole (`cat`, a backup: readahead caches it in large
 * folios). How stdout and stderr are attached does not change it. The
 * executables are dropped from the page cache (dd's `iflag=nocache`) before
 * their first start, which is not counted: the counted starts are warm, as
 * every start of a gateway but the first after a boot.
 *
 *   scripts/build.sh && npx tsx bench/startup/run.ts   # BENCH_REPS=5 BENCH_BASELINE=; JSON in .bench-out/startup.json
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';

const ROOT = join(import.meta.dirname, '..', '..');
const REPS = Number(process.env.BENCH_REPS ?? 5);
const POLL_MS = 5;
const IDLE_MS = 2000;
const NODE = process.execPath;

interface Target {
  name: string;
  /** A file to drop from the page cache before the first start (the executable: see the top of this file). */
  fromDisk?: string;
  /** The command and env of one start on `port`, sharing `state` (data dir, Caddy's home) across starts. */
  command(port: number, state: string): { file: string; args: string[]; env: Record<string, string> };
  path: string;
}

/** The launcher's memory defaults, as bin/meshgate sets them (and did before the bundle). */
const LAUNCHER_ENV = {
  MALLOC_ARENA_MAX: '1',
  MALLOC_TRIM_THRESHOLD_: '131072',
  NODE_OPTIONS: '--max-semi-space-size=4',
};

function serveArgs(port: number, state: string): string[] {
  return ['serve', '--data-dir', join(state, 'data'), '--https-port', String(port), '--log-level', 'warn'];
}

const TSX_LOADER = join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');

const TARGETS: Target[] = [
  {
    name: 'tsx (before)',
    path: '/api/ping',
    command: (port, state) => ({
      file: NODE,
      args: ['--import', TSX_LOADER, join(ROOT, 'app', 'cli', 'main.ts'), ...serveArgs(port, state)],
      env: LAUNCHER_ENV,
    }),
  },
  {
    name: 'bin/meshgate (bundle)',
    path: '/api/ping',
    command: (port, state) => ({ file: join(ROOT, 'bin', 'meshgate'), args: serveArgs(port, state), env: {} }),
  },
  executableTarget('dist/meshgate (executable)', join(ROOT, 'dist', 'meshgate')),
  executableTarget('dist/meshgate as the unit runs it', join(ROOT, 'dist', 'meshgate'), unitEnvironment()),
  ...(process.env.BENCH_BASELINE ? [executableTarget('baseline', process.env.BENCH_BASELINE)] : []),
  {
    name: 'caddy (peer)',
    path: '/',
    command: (port, state) => ({
      file: 'caddy',
      args: ['run', '--config', caddyConfig(port, state)],
      env: { HOME: state, XDG_DATA_HOME: state, XDG_CONFIG_HOME: state },
    }),
  },
];

/** A single executable, read from disk before its first start; its cache folder in its own state dir. */
function executableTarget(name: string, file: string, env: Record<string, string> = {}): Target {
  return {
    name,
    path: '/api/ping',
    fromDisk: file,
    command: (port, state) => ({
      file,
      args: serveArgs(port, state),
      env: { ...env, XDG_CACHE_HOME: join(state, 'cache') },
    }),
  };
}

/** The MALLOC_* settings packaging/meshgate.service gives the gateway (its `Environment=` lines). */
function unitEnvironment(): Record<string, string> {
  const unit = readFileSync(join(ROOT, 'packaging', 'meshgate.service'), 'utf8');
  const assignments = [...unit.matchAll(/^Environment=(.*)$/gm)].flatMap((line) => (line[1] ?? '').split(/\s+/));
  return Object.fromEntries(
    assignments.filter((a) => a.startsWith('MALLOC_')).map((a) => a.split('=') as [string, string]),
  );
}

/** Caddy serving a static 200 over TLS with meshgate's server certificate, admin endpoint off. */
function caddyConfig(port: number, state: string): string {
  const tls = join(sharedTls, 'tls');
  const certificate = { certificate: join(tls, 'server.pem'), key: join(tls, 'server-key.pem') };
  const config = {
    admin: { disabled: true },
    logging: { logs: { default: { level: 'ERROR' } } },
    apps: {
      http: {
        servers: {
          bench: {
            listen: [`127.0.0.1:${port}`],
            routes: [{ handle: [{ handler: 'static_response', body: 'pong' }] }],
            // TLS on this listener with the loaded certificate (no automatic HTTPS: no host is named).
            tls_connection_policies: [{}],
          },
        },
      },
      tls: { certificates: { load_files: [certificate] } },
    },
  };
  const file = join(state, 'caddy.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** VmRSS and its anonymous and file-backed parts (proc(5), /proc/<pid>/status), in MB. */
function rss(pid: number): { rssMb: number; anonMb: number; fileMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (field: string) => {
    const kb = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1];
    if (kb === undefined) throw new Error(`no ${field} for ${pid}`);
    return Number(kb) / 1024;
  };
  return { rssMb: mb('VmRSS'), anonMb: mb('RssAnon'), fileMb: mb('RssFile') };
}

/** CPU the process and its waited-for children (bin/meshgate's checks) used so far: utime..cstime of proc(5). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  const ticks = fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0);
  return (ticks * 1000) / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));
}

/** One start: milliseconds from spawn to the first 200, then the idle RSS; the process is stopped after. */
interface Start {
  readyMs: number;
  cpuMs: number;
  rssMb: number;
  anonMb: number;
  fileMb: number;
}

async function start(target: Target, state: string, ca: () => string | null): Promise<Start> {
  const port = await freePort();
  const { file, args, env } = target.command(port, state);
  const started = performance.now();
  // A clean environment: no loader flags of the bench's own runner reach the target.
  const clean = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: state };
  const proc = spawn(file, args, { env: { ...clean, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => {
    stderr += d;
  });
  let exited = false;
  proc.once('exit', () => {
    exited = true;
  });
  try {
    let agent: Agent | null = null;
    for (;;) {
      if (exited) throw new Error(`${target.name} exited: ${stderr}`);
      if (performance.now() - started > 60_000) throw new Error(`${target.name} did not serve within 60 s`);
      const pem = ca();
      agent ??= pem ? new Agent({ connect: { ca: pem, servername: 'localhost' } }) : null;
      if (agent) {
        const status = await request(`https://127.0.0.1:${port}${target.path}`, { dispatcher: agent })
          .then(async (res) => (await res.body.dump(), res.statusCode))
          .catch(() => 0);
        if (status === 200) break;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const readyMs = performance.now() - started;
    const cpu = cpuMs(proc.pid as number);
    await agent?.close();
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    return { readyMs, cpuMs: cpu, ...rss(proc.pid as number) };
  } finally {
    const gone = new Promise((resolve) => proc.once('close', resolve));
    if (!exited) proc.kill('SIGTERM');
    await gone;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** What running from the sources took besides Node: the packages and the source folders. */
const SOURCES = ['node_modules', 'app', 'domains', 'gateway'];

function sizeMb(...paths: string[]): number {
  const du = (path: string) => Number(execFileSync('du', ['-sbD', path], { encoding: 'utf8' }).split('\t')[0]);
  const bytes = paths.reduce((sum, path) => sum + du(path), 0);
  return bytes / 1e6;
}

const work = mkdtempSync(join(tmpdir(), 'bench-startup-'));
/** The tsx target's state: its data dir's TLS material is what Caddy serves too. */
const sharedTls = join(work, 'tsx', 'data');

async function main(): Promise<void> {
  const results: Record<string, Start & { starts: number[] }> = {};
  const pem = (state: string) => () => {
    try {
      return readFileSync(join(state, 'tls', 'ca.pem'), 'utf8');
    } catch {
      return null;
    }
  };
  const prepared = [];
  for (const target of TARGETS) {
    const state = join(work, target.name.replace(/[^a-z].*$/, ''));
    mkdirSync(state, { recursive: true });
    // Caddy's certificate is meshgate's, so the CA is the tsx target's; meshgate's own is in its data dir.
    const ca = target.name.startsWith('caddy') ? pem(sharedTls) : pem(join(state, 'data'));
    if (target.fromDisk) execFileSync('dd', [`if=${target.fromDisk}`, 'iflag=nocache', 'count=0', 'status=none']);
    await start(target, state, ca); // cold: not counted
    prepared.push({ target, state, ca, runs: [] as Start[] });
  }
  for (let i = 0; i < REPS; i++)
    for (const each of prepared) each.runs.push(await start(each.target, each.state, each.ca));
  for (const { target, runs } of prepared) {
    const result = {
      readyMs: median(runs.map((r) => r.readyMs)),
      cpuMs: median(runs.map((r) => r.cpuMs)),
      rssMb: median(runs.map((r) => r.rssMb)),
      anonMb: median(runs.map((r) => r.anonMb)),
      fileMb: median(runs.map((r) => r.fileMb)),
      starts: runs.map((r) => Math.round(r.readyMs)),
    };
    results[target.name] = result;
    const serving = `start→serving ${result.readyMs.toFixed(0)} ms (${result.starts.join(', ')})`;
    const parts = `anon ${result.anonMb.toFixed(1)} + file ${result.fileMb.toFixed(1)}`;
    const rest = `CPU ${result.cpuMs.toFixed(0)} ms, idle RSS ${result.rssMb.toFixed(1)} MB (${parts})`;
    console.log(`${target.name.padEnd(28)} ${serving}, ${rest}`);
  }
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
  const sizes = {
    'tsx (before): node + node_modules + sources': sizeMb(NODE, ...SOURCES.map((d) => join(ROOT, d))),
    'dist/meshgate': statSync(join(ROOT, 'dist', 'meshgate')).size / 1e6,
    caddy: statSync(execFileSync('sh', ['-c', 'command -v caddy'], { encoding: 'utf8' }).trim()).size / 1e6,
  };
  for (const [name, mb] of Object.entries(sizes)) console.log(`${name.padEnd(46)} ${mb.toFixed(1)} MB`);
  const caddy = results['caddy (peer)'];
  const exe = results['dist/meshgate (executable)'];
  if (caddy && exe) {
    const ratio = (of: (r: Start) => number) => (of(exe) / of(caddy)).toFixed(2);
    console.log(`executable / caddy: start ${ratio((r) => r.readyMs)}×, idle RSS ${ratio((r) => r.rssMb)}×`);
  }
  mkdirSync(join(ROOT, '.bench-out'), { recursive: true });
  const report = { reps: REPS, load: loadavg(), results, sizes };
  writeFileSync(join(ROOT, '.bench-out', 'startup.json'), JSON.stringify(report, null, 2));
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => rmSync(work, { recursive: true, force: true }));
