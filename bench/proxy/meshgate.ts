/**
 * The meshgate under test, started as shipped — `bin/meshgate serve`, so the
 * launcher's Node flags and malloc settings apply — on a fresh data dir with
 * the plain-HTTP listener (nginx is measured without TLS too), its stdout
 * (the access log) going to a file as nginx's access log does, one model
 * deployment in front of the bench upstream, and an admin token (runtime
 * URLs verify it on every request; verified tokens are cached).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PASSWORD = 'bench-admin-password';
const repo = join(import.meta.dirname, '..', '..');

export interface Meshgate {
  /** The plain-HTTP listener's origin, for API calls. */
  base: string;
  /** The deployment's runtime URL (`/runtime/models/<id>`) on the plain-HTTP listener. */
  url: string;
  /** The same deployment on the HTTPS (HTTP/2) listener, and the CA that listener's certificate chains to. */
  httpsUrl: string;
  caPem: string;
  token: string;
  pid: number;
  /** Its standard output (the access log, and its workers' too), a file in its data dir until it stops. */
  logFile: string;
  /** SIGTERM; settles once the process has exited. */
  stop(): Promise<void>;
}

async function listeningUrls(logFile: string, exited: () => boolean): Promise<{ http: string; https: string }> {
  for (let i = 0; i < 600 && !exited(); i++) {
    const log = readFileSync(logFile, 'utf8');
    const http = /meshgate listening (http:\/\/\S+)/.exec(log)?.[1];
    const https = /meshgate listening (https:\/\/\S+)/.exec(log)?.[1];
    if (http && https) return { http, https };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`meshgate did not start; see ${logFile}`);
}

async function call(url: string, init: RequestInit): Promise<Record<string, string>> {
  const response = await fetch(url, init);
  if (!response.ok) throw new Error(`${init.method} ${url} answered ${response.status}`);
  return (await response.json()) as Record<string, string>;
}

/**
 * `extra`: more `serve` flags, e.g. `['--workers', '2']`; `env`: more settings (PLATFORM_WORKER_LISTEN);
 * `checkout`: whose `bin/meshgate` runs (another build in the same run, e.g. main's beside a change).
 */
export async function startMeshgate(
  upstream: string,
  httpPort: number,
  extra: string[] = [],
  env: Record<string, string> = {},
  checkout = repo,
): Promise<Meshgate> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-meshgate-'));
  const logFile = join(dataDir, 'stdout.log');
  const out = openSync(logFile, 'a');
  const args = [
    'serve',
    '--data-dir',
    dataDir,
    '--https-port',
    '0',
    '--http-port',
    String(httpPort),
    '--bind',
    '127.0.0.1',
    ...extra,
  ];
  const proc = spawn(join(checkout, 'bin', 'meshgate'), args, {
    env: { ...process.env, PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: PASSWORD, ...env },
    stdio: ['ignore', out, out],
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    proc.once('exit', () => {
      exited = true;
      rmSync(dataDir, { recursive: true, force: true });
      resolve();
    }),
  );
  const { http: base, https } = await listeningUrls(logFile, () => exited);
  const caPem = readFileSync(join(dataDir, 'tls', 'ca.pem'), 'utf8');
  const form = new URLSearchParams({ username: 'admin', password: PASSWORD, grant_type: 'password' });
  const { access_token: token } = await call(`${base}/api/auth/token`, { method: 'POST', body: form });
  const { id } = await call(`${base}/api/serving/deployments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'model', name: 'bench', upstream }),
  });
  const path = `/runtime/models/${id}`;
  return {
    base,
    url: `${base}${path}`,
    httpsUrl: `${https}${path}`,
    caPem,
    token: token as string,
    pid: proc.pid as number,
    logFile,
    stop: () => {
      if (!exited) proc.kill('SIGTERM');
      return exit;
    },
  };
}
