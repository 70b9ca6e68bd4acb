/**
 * bench/mesh: the same GET (/api/auth/users/me) as
 * (a) a local call on the receiver and (b) source → receiver over the mesh,
 * both real meshgates in this process (hardened envelope, peer_kc with
 * require_peer_jwt, so the peer token is validated and cached). Prints RPS,
 * p50/p99 and the mesh/local ratio, then the CPU cost per request of the
 * envelope work on each side (sign; verify; cached peer-token lookup).
 * Run: npx tsx bench/mesh/run.ts [requests=3000] [concurrency=8]
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { type Agent, request } from 'undici';
import { VerifiedTokenCache } from '../../domains/auth/tokens.ts';
import { canonicalizeRequest, pskKey, signatureMatches } from '../../gateway/mesh/canonical.ts';
import { MESH } from '../../gateway/mesh/headers.ts';
import { signHeaders } from '../../gateway/mesh/sign.ts';
import { startPeer } from '../../test/helpers/federation.ts';
import { allow, pairForMesh } from '../../test/helpers/mesh.ts';
import { benchContext, runBench } from '../harness.ts';

const total = Number(process.argv[2] ?? 3000);
const concurrency = Number(process.argv[3] ?? 8);
const t = benchContext;

async function load(url: string, token: string, agent: Agent) {
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < total) {
      next++;
      const started = performance.now();
      const res = await request(url, { headers: { authorization: `Bearer ${token}` }, dispatcher: agent });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`);
      latencies.push(performance.now() - started);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] as number;
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99) };
}

function perOp(label: string, n: number, fn: () => unknown) {
  for (let i = 0; i < 1000; i++) fn();
  const started = process.cpuUsage();
  for (let i = 0; i < n; i++) fn();
  const used = process.cpuUsage(started);
  const micros = (used.user + used.system) / n;
  console.log(`${label.padEnd(44)} ${micros.toFixed(2)} µs CPU/request`);
  return micros;
}

async function main() {
  const untrusted = { federation: { peerTimeoutMs: 5000, allowUntrustedFederation: true }, logLevel: 'warn' as const };
  const source = await startPeer(t, 'bench-a', untrusted);
  const receiver = await startPeer(t, 'bench-b', untrusted);
  const pair = await pairForMesh(source, receiver, null);
  const sourceToken = await source.adminToken();
  const me = await source.request('GET', '/api/auth/users/me', { token: sourceToken });
  await allow(pair, me.json.sub);
  const localUrl = `${receiver.gateway.httpsUrl}/api/auth/users/me`;
  const meshUrl = `${source.gateway.httpsUrl}/api/mesh/${pair.sourceFedId}/auth/users/me`;
  const receiverToken = await receiver.adminToken();
  await load(localUrl, receiverToken, receiver.agent);
  await load(meshUrl, sourceToken, source.agent);
  const local = await load(localUrl, receiverToken, receiver.agent);
  const mesh = await load(meshUrl, sourceToken, source.agent);
  console.log(
    `features: ${pair.features.join(', ') || 'base envelope only'}; ${total} requests, concurrency ${concurrency}`,
  );
  for (const [name, r] of [
    ['local (receiver)', local],
    ['mesh (source → receiver)', mesh],
  ] as const) {
    console.log(
      `${name.padEnd(26)} ${r.rps.toFixed(0).padStart(6)} rps ` +
        `  p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms`,
    );
  }
  console.log(
    `ratio mesh/local: ` +
      `rps ${(mesh.rps / local.rps).toFixed(2)}, p50 ` +
      `+${(mesh.p50 - local.p50).toFixed(2)} ms (target ≤ 2 ms)`,
  );

  const key = pskKey(pair.psk);
  const features = new Set(pair.features);
  const base = {
    [MESH.sourceClusterId]: pair.sourceClusterId,
    [MESH.userId]: me.json.sub,
    [MESH.userRoles]: 'admin',
    [MESH.route]: pair.sourceClusterId,
    [MESH.correlationId]: randomUUID(),
    [MESH.peerToken]: sourceToken,
  };
  const now = () => Math.floor(Date.now() / 1000);
  const signed = signHeaders(base, 'GET', '/api/auth/users/me', undefined, { key, features, nowSeconds: now });
  const sign = perOp('source: meshSign (canonical + HMAC + nonce)', 20_000, () =>
    signHeaders(base, 'GET', '/api/auth/users/me', undefined, { key, features, nowSeconds: now }),
  );
  const verify = perOp('receiver: canonical + constant-time HMAC', 20_000, () =>
    signatureMatches(
      key,
      canonicalizeRequest({
        sourceClusterId: pair.sourceClusterId,
        userId: me.json.sub,
        roles: 'admin',
        route: pair.sourceClusterId,
        method: 'GET',
        uri: '/api/auth/users/me',
        ts: Number(signed[MESH.ts]),
        peerToken: sourceToken,
        bodySha256: signed[MESH.bodySha256],
        nonce: signed[MESH.nonce],
      }),
      signed[MESH.signature] as string,
    ),
  );
  const cache = new VerifiedTokenCache<object>();
  cache.set(`jwks\n${sourceToken}`, {}, now() + 600, 'j');
  const token = perOp('receiver: peer-token cache hit', 200_000, () => cache.get(`jwks\n${sourceToken}`));
  console.log(
    `per side beyond the plain proxy path: ` +
      `source ${sign.toFixed(1)} µs, ` +
      `receiver ${(verify + token).toFixed(1)} µs (target ≤ 20 ` +
      `µs)`,
  );
}

runBench(main);
