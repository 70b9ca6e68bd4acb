/**
 * bench/auth: an administrator's login latency while 32 clients, each on its
 * own loopback address, flood wrong passwords for the admin's username,
 * against the same administrator's login with no flood, in the same run.
 * The flood runs in a worker thread (its own event loop, as a remote attacker
 * would be), the gateway and the admin's client in the main thread.
 * Two gateways: default throttle settings, and buckets opened wide so only
 * the fair hashing queue protects the admin (every flood guess is hashed).
 * Bounded: `logins` admin logins per phase, at most 400 guesses per flooder,
 * 60 s per phase. Loopback only.
 * Run: npx tsx bench/auth/login-flood.ts [logins=40]
 */
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Agent, request } from 'undici';
import type { ConfigInput } from '../../gateway/config/schema.ts';
import { ADMIN_PASSWORD, startTestGateway, type TestGateway } from '../../test/helpers/gateway.ts';
import { benchContext, runBench } from '../harness.ts';

const logins = Number(process.argv[2] ?? 40);
const FLOODERS = 32;
const GUESSES_PER_FLOODER = 400;
const PHASE_LIMIT_MS = 60_000;
const t = benchContext;

async function tryLogin(url: string, agent: Agent, password: string): Promise<number> {
  const res = await request(`${url}/api/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: 'admin', password, grant_type: 'password' }).toString(),
    dispatcher: agent,
  });
  await res.body.text();
  return res.statusCode;
}

/** `logins` sequential admin logins; every one must succeed. Returns p50/p99 in ms. */
async function adminLogins(gw: TestGateway) {
  const latencies: number[] = [];
  const deadline = performance.now() + PHASE_LIMIT_MS;
  for (let i = 0; i < logins && performance.now() < deadline; i++) {
    const started = performance.now();
    const status = await tryLogin(gw.gateway.httpsUrl, gw.agent, ADMIN_PASSWORD);
    if (status !== 200) throw new Error(`admin login answered ${status}`);
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] as number;
  return { p50: at(0.5), p99: at(0.99) };
}

/** The worker: 32 clients on their own loopback addresses, each guessing until told to stop or out of guesses. */
async function flood(url: string, ca: string) {
  const agents = Array.from(
    { length: FLOODERS },
    (_, i) => new Agent({ localAddress: `127.0.1.${i + 1}`, connect: { ca, servername: 'localhost' } }),
  );
  const counts: Record<number, number> = {};
  let sent = 0;
  let stop = false;
  parentPort?.on('message', () => {
    stop = true;
  });
  await Promise.all(
    agents.map(async (agent) => {
      for (let i = 0; i < GUESSES_PER_FLOODER && !stop; i++) {
        const status = await tryLogin(url, agent, `wrong-${i}`);
        counts[status] = (counts[status] ?? 0) + 1;
        // Let the flood build its queue before the admin arrives.
        if (++sent === FLOODERS) parentPort?.postMessage('flooding');
      }
    }),
  );
  await Promise.all(agents.map((a) => a.close()));
  parentPort?.postMessage(counts);
}

async function flooded(gw: TestGateway) {
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { url: gw.gateway.httpsUrl, ca: gw.gateway.caPem },
    execArgv: ['--import', 'tsx'],
  });
  const next = () => new Promise<unknown>((resolve) => worker.once('message', resolve));
  await next();
  const admin = await adminLogins(gw);
  worker.postMessage('stop');
  const counts = await next();
  await worker.terminate();
  return { ...admin, flood: counts };
}

async function measure(label: string, overrides: ConfigInput) {
  const gw = await startTestGateway(t, { logLevel: 'error', ...overrides });
  await adminLogins(gw); // warm-up
  const quiet = await adminLogins(gw);
  const busy = await flooded(gw);
  console.log(
    `${label.padEnd(34)} quiet p50/p99 ${quiet.p50.toFixed(0)}/${quiet.p99.toFixed(0)} ms | ` +
      `flood ` +
      `p50/p99 ${busy.p50.toFixed(0)}/${busy.p99.toFixed(0)} ms | ` +
      `p99 ratio ${(busy.p99 / quiet.p99).toFixed(2)} | flood ` +
      `answers ${JSON.stringify(busy.flood)}`,
  );
}

async function main() {
  await measure('default throttle', {});
  await measure('buckets wide open (fair queue only)', {
    auth: { throttle: { clientBurst: 1000, accountBurst: 100, accountRefillSeconds: 0.01 } },
  });
}

if (!isMainThread) {
  await flood(workerData.url, workerData.ca);
} else {
  runBench(main);
}
