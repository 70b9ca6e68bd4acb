/**
 * bench/mesh/fleet.ts: federation at scale, real meshgates in this process.
 *
 * 1. N gateways; one fleet file applied to each through the apply API (what `meshgate federation apply` calls),
 *    receivers first: the full mesh's pairing time, then this process's RSS per gateway and open files.
 * 2. A mesh call from the first gateway to the second (peer_kc, allowlisted) against a local call: p50/p99 with the
 *    N-1 records of the mesh, then with 990 more PAIRED records written straight into the database (as another
 *    process's writes would arrive: one change-feed notice each), 1,000 in all. Counts record refreshes and full
 *    reloads on the request path during the timed runs (target: none), and the CPU the process spends idle.
 *
 * Run: npx tsx bench/mesh/fleet.ts [gateways=6] [requests=2000]
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type Agent, request } from 'undici';
import { readDeclaredFile } from '../../domains/federation/declared-file.ts';
import { RecordCache } from '../../domains/federation/record-cache.ts';
import { startPeer } from '../../test/helpers/federation.ts';
import type { TestGateway } from '../../test/helpers/gateway.ts';
import { allow, pairForMesh } from '../../test/helpers/mesh.ts';
import { benchContext, runBench } from '../harness.ts';

const gatewayCount = Number(process.argv[2] ?? 6);
const total = Number(process.argv[3] ?? 2000);
const SIMULATED = 990;
const t = benchContext;
const settings = { federation: { peerTimeoutMs: 5000, allowUntrustedFederation: true }, logLevel: 'error' as const };

/** Refreshes and reloads of every record cache in this process, counted around the timed runs. */
const cacheWork = { refreshes: 0, reloads: 0 };
const { refresh, reload } = RecordCache.prototype;
RecordCache.prototype.refresh = function (this: RecordCache, id: string) {
  cacheWork.refreshes++;
  refresh.call(this, id);
};
RecordCache.prototype.reload = function (this: RecordCache) {
  cacheWork.reloads++;
  reload.call(this);
};

async function load(url: string, token: string, agent: Agent) {
  const latencies: number[] = [];
  for (let i = 0; i < total; i++) {
    const started = performance.now();
    const res = await request(url, { headers: { authorization: `Bearer ${token}` }, dispatcher: agent });
    await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`);
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] as number;
  return { p50: at(0.5), p99: at(0.99) };
}

async function applyFleet(gateways: TestGateway[]) {
  const dir = join(tmpdir(), `meshgate-fleet-${randomUUID()}`);
  mkdirSync(dir);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'fleet.key'), randomUUID() + randomUUID());
  const members = gateways.map((gw) => ({
    name: gw.overrides.clusterName as string,
    address: `127.0.0.1:${gw.port}`,
    hostname: gw.overrides.hostnames?.[0],
  }));
  writeFileSync(join(dir, 'fleet.json'), JSON.stringify({ fleet: { psk_file: 'fleet.key', members } }));
  const started = performance.now();
  for (const gw of [...gateways].reverse()) {
    const peers = readDeclaredFile(join(dir, 'fleet.json'), gw.overrides.clusterName as string, {});
    const res = await gw.request('POST', '/api/cluster/federations/apply', {
      token: await gw.adminToken(),
      json: { peers },
    });
    const failed = (res.json.peers as { outcome: string }[]).filter((o) => !['paired', 'waiting'].includes(o.outcome));
    if (res.status !== 200 || failed.length > 0) throw new Error(`apply: ${res.status} ${JSON.stringify(failed)}`);
  }
  return performance.now() - started;
}

/** 990 PAIRED records on the receiver, inserted as another process would (each published on the feed). */
function simulateRecords(gw: TestGateway) {
  const sql = gw.gateway.deps.sql;
  const insert = sql.prepare(
    `INSERT INTO federations (id, role, remote_cluster_name, remote_ips, local_cluster_id, remote_cluster_id, status,
       created_at, updated_at, brokering_enabled, grandfathered, mesh_features)
     VALUES (?, 'receiver', ?, '[]', 'x', ?, 'PAIRED', ?, ?, 1, 0, '[]')`,
  );
  const at = new Date().toISOString();
  for (let i = 0; i < SIMULATED; i++) insert.run(randomUUID(), `sim-${i}`, randomUUID(), at, at);
}

async function idleCpuPerMinute(seconds: number) {
  const before = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const used = process.cpuUsage(before);
  return ((used.user + used.system) / 1e6) * (60 / seconds);
}

async function main() {
  const rssBefore = process.memoryUsage().rss;
  const gateways: TestGateway[] = [];
  for (let i = 0; i < gatewayCount; i++)
    gateways.push(await startPeer(t, `fleet-${String(i).padStart(2, '0')}`, settings));
  const rssStarted = process.memoryUsage().rss;
  const applyMs = await applyFleet(gateways);
  const pairings = (gatewayCount * (gatewayCount - 1)) / 2;
  const each = (applyMs / pairings).toFixed(1);
  console.log(`${gatewayCount} gateways, ${pairings} pairings applied in ${applyMs.toFixed(0)} ms (${each} ms each)`);
  const rssPaired = process.memoryUsage().rss;
  const perGateway = (bytes: number) => (bytes / gatewayCount / 2 ** 20).toFixed(1);
  console.log(
    `RSS per gateway (this process / N): started ${perGateway(rssStarted - rssBefore)} MB, ` +
      `paired +${perGateway(rssPaired - rssStarted)} MB; open files ${readdirSync('/proc/self/fd').length}`,
  );

  const [source, receiver] = gateways as [TestGateway, TestGateway];
  const pair = await pairForMesh(source, receiver, null, 'mesh-target');
  const token = await source.adminToken();
  const me = await source.request('GET', '/api/auth/users/me', { token });
  await allow(pair, me.json.sub);
  const localUrl = `${receiver.gateway.httpsUrl}/api/auth/users/me`;
  const meshUrl = `${source.gateway.httpsUrl}/api/mesh/mesh-target/auth/users/me`;
  const receiverToken = await receiver.adminToken();
  const measure = async (label: string) => {
    await load(meshUrl, token, source.agent);
    cacheWork.refreshes = 0;
    cacheWork.reloads = 0;
    const local = await load(localUrl, receiverToken, receiver.agent);
    const mesh = await load(meshUrl, token, source.agent);
    console.log(
      `${label.padEnd(22)} local p50 ${local.p50.toFixed(2)} p99 ${local.p99.toFixed(2)} ms; ` +
        `mesh p50 ${mesh.p50.toFixed(2)} p99 ${mesh.p99.toFixed(2)} ms; ` +
        `cache refreshes ${cacheWork.refreshes}, reloads ${cacheWork.reloads} during the runs`,
    );
    return mesh;
  };
  const few = await measure(`${gatewayCount} records`);
  simulateRecords(receiver);
  simulateRecords(source);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const many = await measure(`${gatewayCount + SIMULATED} records`);
  console.log(
    `mesh p99 at ${gatewayCount + SIMULATED} / at ${gatewayCount}: ${(many.p99 / few.p99).toFixed(2)} (target ≤ 1.2)`,
  );
  const idle = await idleCpuPerMinute(20);
  console.log(`idle CPU of the whole process (${gatewayCount} gateways): ${idle.toFixed(2)} s per minute`);
}

runBench(main);
