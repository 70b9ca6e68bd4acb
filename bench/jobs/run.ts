/**
 * Jobs benchmark, never run by the test suite. A real
 * gateway in-process with the local runtime, driven over HTTPS:
 *  1. submit → RUNNING latency (first status poll that reads RUNNING);
 *  2. POST /run round trip against the peer: the same bare `python3 -c`
 *     process spawned directly, in the same run;
 *  3. N concurrent jobs, each printing its own line and marker: every log
 *     and every result must come back (zero lost).
 * Usage: node --import tsx bench/jobs/run.ts [--samples 40] [--concurrent 100]
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TestGateway } from '../../test/helpers/gateway.ts';

const { values } = parseArgs({
  options: { samples: { type: 'string', default: '40' }, concurrent: { type: 'string', default: '100' } },
});
const SAMPLES = Number(values.samples);
const CONCURRENT = Number(values.concurrent);
const MARKER = 'KZ_MESH_RUN_ON_JSON::';
const PY = `python3 -c 'print(1)'`;

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number;
const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p95 ${pct(xs, 95).toFixed(1)} ms`;

async function submitToRunning(gw: TestGateway, token: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const start = process.hrtime.bigint();
    const id = (await gw.request('POST', '/api/cluster/jobs/submit', { token, json: { entrypoint: 'sleep 0.3' } })).json
      .id;
    for (;;) {
      const status = (await gw.request('GET', `/api/cluster/jobs/${id}/status`, { token })).json.status;
      if (status !== 'PENDING') break;
    }
    out.push(ms(start));
  }
  return out;
}

/** Peer and gateway samples alternate, so both see the same machine load. */
async function runVersusBare(gw: TestGateway, token: string): Promise<{ peer: number[]; viaRun: number[] }> {
  const peer: number[] = [];
  const viaRun: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    let start = process.hrtime.bigint();
    await new Promise<void>((resolve, reject) => execFile('/bin/sh', ['-c', PY], (e) => (e ? reject(e) : resolve())));
    peer.push(ms(start));
    start = process.hrtime.bigint();
    const res = await gw.request('POST', '/api/cluster/jobs/run', { token, json: { entrypoint: PY } });
    if (res.json.status !== 'SUCCEEDED') throw new Error(`run failed: ${res.text}`);
    viaRun.push(ms(start));
  }
  return { peer, viaRun };
}

async function concurrent(
  gw: TestGateway,
  token: string,
): Promise<{ wallMs: number; lostLogs: number; lostResults: number }> {
  const start = process.hrtime.bigint();
  const ids = await Promise.all(
    Array.from({ length: CONCURRENT }, async (_, i) => {
      const entrypoint = `echo line-${i}; echo '${MARKER}{"i":${i}}'`;
      return (await gw.request('POST', '/api/cluster/jobs/submit', { token, json: { entrypoint } })).json.id as string;
    }),
  );
  const done = new Set<string>();
  while (done.size < ids.length) {
    for (const id of ids.filter((x) => !done.has(x))) {
      const status = (await gw.request('GET', `/api/cluster/jobs/${id}/status`, { token })).json.status;
      if (status !== 'PENDING' && status !== 'RUNNING') done.add(id);
    }
  }
  const wallMs = ms(start);
  let lostLogs = 0;
  let lostResults = 0;
  await Promise.all(
    ids.map(async (id, i) => {
      const logs = (await gw.request('GET', `/api/cluster/jobs/${id}/logs`, { token })).json.logs as string;
      if (!logs.includes(`line-${i}\n`)) lostLogs++;
      const result = await gw.request('GET', `/api/cluster/jobs/${id}/result`, { token });
      if (result.status !== 200 || result.json.i !== i) lostResults++;
    }),
  );
  return { wallMs, lostLogs, lostResults };
}

const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-bench-jobs-'));
const gw = await new TestGateway(dataDir, { logLevel: 'warn', jobs: { runPollIntervalMs: 250 } }).start();
try {
  const token = await gw.adminToken();
  // warm: TLS session, page cache
  await gw.request('POST', '/api/cluster/jobs/run', { token, json: { entrypoint: PY } });
  const latency = await submitToRunning(gw, token);
  const { peer, viaRun } = await runVersusBare(gw, token);
  const overhead = pct(viaRun, 50) - pct(peer, 50);
  const paired = pct(
    viaRun.map((v, i) => v - (peer[i] as number)),
    50,
  );
  const burst = await concurrent(gw, token);
  console.log(`submit → RUNNING          ${fmt(latency)}   (target p50 ≤ 50 ms)`);
  console.log(`bare python3 -c (peer)    ${fmt(peer)}`);
  console.log(`POST /run python3 -c      ${fmt(viaRun)}`);
  console.log(
    `run overhead (p50 − peer) ${overhead.toFixed(1)} ms, ` +
      `ratio ${(pct(viaRun, 50) / pct(peer, 50)).toFixed(2)}×; ` +
      `median of paired differences ${paired.toFixed(1)} ms ` +
      `  (target ≤ 150 ms)`,
  );
  console.log(
    `${CONCURRENT} concurrent jobs ` +
      `      ${(burst.wallMs / 1000).toFixed(2)} s wall, lost ` +
      `logs ${burst.lostLogs}, lost ` +
      `results ${burst.lostResults}   (target 0 / 0)`,
  );
} finally {
  await gw.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
