/**
 * bench/proxy/h2-memory: resident memory of the gateway under mixed HTTP/2
 * load, against a bare Node HTTP/2 proxy (bare-h2.ts) under the same load in
 * the same run. SESSIONS client sessions each keep STREAMS requests in
 * flight: 70 % small GETs, 20 % 64 KiB uploads, 10 % 1 MiB downloads.
 * Bounded by BENCH_SECONDS and BENCH_MAX_REQUESTS; loopback only; the RSS
 * of the process under test is sampled every 100 ms and its peak reported.
 *   npx tsx bench/proxy/h2-memory.ts   (env: BENCH_SECONDS=15 BENCH_SESSIONS=16 BENCH_STREAMS=64)
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type ClientHttp2Session, connect } from 'node:http2';
import { join } from 'node:path';
import { startMeshgate } from './meshgate.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 16);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 64);
const MAX_REQUESTS = Number(process.env.BENCH_MAX_REQUESTS ?? 400_000);
const upload = Buffer.alloc(64 * 1024, 98);
const children: ChildProcess[] = [];

/** Started like bin/meshgate starts the gateway: same young-generation cap and malloc settings. */
function child<T>(file: string, args: string[]): Promise<{ proc: ChildProcess; hello: T }> {
  const proc = fork(join(import.meta.dirname, file), args, {
    execArgv: ['--max-semi-space-size=4', '--import', 'tsx'],
    env: { ...process.env, MALLOC_ARENA_MAX: '1', MALLOC_TRIM_THRESHOLD_: '131072' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(proc);
  return new Promise((resolve, reject) => {
    proc.once('message', (hello) => resolve({ proc, hello: hello as T }));
    proc.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
  });
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

function once(session: ClientHttp2Session, path: string, n: number, token: string): Promise<boolean> {
  const kind = n % 10;
  const post = kind >= 7 && kind < 9;
  const target = kind === 9 ? `${path}/stream?mb=1` : `${path}/hello`;
  return new Promise((resolve) => {
    const stream = session.request(
      { ':method': post ? 'POST' : 'GET', ':path': target, authorization: `Bearer ${token}` },
      { endStream: !post },
    );
    let status = 0;
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
    });
    stream.on('data', () => {});
    stream.on('close', () => resolve(status === 200));
    stream.on('error', () => resolve(false));
    if (post) stream.end(upload);
  });
}

/** Drives the mixed load at `base` and samples `pid`'s RSS; returns the peak and the request counts. */
async function load(base: string, caPem: string, token: string, pid: number) {
  const url = new URL(base);
  const deadline = Date.now() + SECONDS * 1000;
  let issued = 0;
  let ok = 0;
  let failed = 0;
  let peak = rssMb(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 100);
  const sessions = Array.from({ length: SESSIONS }, () => connect(url.origin, { ca: caPem, servername: 'localhost' }));
  const lane = async (session: ClientHttp2Session) => {
    while (Date.now() < deadline && issued < MAX_REQUESTS) {
      if (await once(session, url.pathname, issued++, token)) ok += 1;
      else failed += 1;
    }
  };
  await Promise.all(sessions.flatMap((session) => Array.from({ length: STREAMS }, () => lane(session))));
  clearInterval(sampler);
  for (const session of sessions) session.close();
  return { peak_rss_mb: Math.round(peak), after_rss_mb: Math.round(rssMb(pid)), ok, failed };
}

try {
  const { hello: up } = await child<{ port: number }>('upstream.ts', []);
  const upstream = `http://127.0.0.1:${up.port}`;
  const { proc: bare, hello } = await child<{ port: number; caPem: string }>('bare-h2.ts', [upstream]);
  const peer = await load(
    `https://127.0.0.1:${hello.port}/runtime/models/bench`,
    hello.caPem,
    'none',
    bare.pid as number,
  );
  bare.disconnect();
  const gateway = await startMeshgate(upstream, 0);
  const idle = Math.round(rssMb(gateway.pid));
  const measured = await load(gateway.httpsUrl, gateway.caPem, gateway.token, gateway.pid);
  gateway.stop();
  const ratio = Math.round((measured.peak_rss_mb / peer.peak_rss_mb) * 100) / 100;
  console.log(
    JSON.stringify(
      {
        sessions: SESSIONS,
        streams: STREAMS,
        seconds: SECONDS,
        meshgate: { idle_rss_mb: idle, ...measured },
        bare_h2: peer,
        ratio,
      },
      null,
      2,
    ),
  );
} finally {
  for (const proc of children) if (proc.connected) proc.disconnect();
}
