/**
 * Several `meshgate serve` processes on one PostgreSQL database are one cluster (test/helpers/cluster.ts: three
 * nodes behind a real HAProxy doing TLS passthrough). Any node verifies any node's tokens; a node killed under load
 * costs at most the requests in flight on it, and it rejoins; a logout or a tuple delete on one node holds on the
 * others within a second; a mesh peer paired through the load balancer is served by every node, and every node
 * reaches it; a node with the wrong node key starts nowhere and writes nothing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { execMeshgate } from '../../../helpers/artifact.ts';
import {
  CLUSTER_HOSTNAME,
  type Cluster,
  ClusterEndpoint,
  type ClusterNode,
  serveNode,
  startCluster,
} from '../../../helpers/cluster.ts';
import { freshPostgresDatabase, testNodeKeyFile, testPostgres } from '../../../helpers/engine.ts';
import { startPeer } from '../../../helpers/federation.ts';
import type { After } from '../../../helpers/gateway.ts';
import { allow, craft, pairForMesh, reversed } from '../../../helpers/mesh.ts';
import { ADMIN_PASSWORD, steadyLoad, untilServed } from '../../../helpers/workers.ts';

const run = promisify(execFile);
const ME = '/api/auth/users/me';

/** One cluster for the file: the hooks its parts registered run after the last test. */
const hooks: (() => unknown)[] = [];
const fileLifetime: After = { after: (hook) => void hooks.push(hook) };
after(async () => {
  for (const hook of hooks.splice(0).reverse()) await hook();
});

let cluster: Cluster;
let nodes: ClusterNode[];
before(async () => {
  cluster = await startCluster(fileLifetime, 3);
  nodes = cluster.nodes;
});

const sum = (counts: number[]) => counts.reduce((a, b) => a + b, 0);

/** Polls `check` until it holds or `ms` passed; the elapsed time, or null when it never held. */
async function within(ms: number, check: () => Promise<boolean>): Promise<number | null> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > ms) return null;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('any node verifies any node’s tokens, and every node publishes the same JWKS', async () => {
  const token = await nodes[0]?.endpoint.login('admin', ADMIN_PASSWORD);
  for (const node of nodes) {
    const me = await node.endpoint.request('GET', ME, { token });
    assert.equal(me.status, 200, `${node.name}: ${me.text}`);
    assert.equal(me.json.username, 'admin');
  }
  const jwks = await Promise.all(nodes.map((node) => node.endpoint.request('GET', '/api/auth/jwks')));
  assert.ok(jwks[0]?.json.keys.length > 0, 'the JWKS has keys');
  for (const answer of jwks) assert.deepEqual(answer.json, jwks[0]?.json);
  const forged = `${token?.slice(0, -4)}AAAA`;
  for (const node of nodes) {
    const refused = await node.endpoint.request('GET', ME, { token: forged });
    assert.equal(refused.status, 401, `${node.name} refuses a token whose signature was altered`);
  }
});

test('a node killed with SIGKILL under load through HAProxy: the others keep serving, and it rejoins', async (t) => {
  const victim = nodes[1] as ClusterNode;
  const token = await cluster.balanced.adminToken();
  // 6 HTTP/2 connections with 2 streams each and 3 HTTP/1.1 ones: 15 requests in flight at most, spread round robin.
  const loops = { connections: 6, streams: 2, http1: 3 };
  const inFlightAtMost = loops.connections * loops.streams + loops.http1;
  const load = steadyLoad(cluster.balanced, { ...loops, maxRequests: 50_000, maxMs: 30_000, path: ME, token });
  try {
    await untilServed(load.result, 150);
    await victim.kill();
    await cluster.untilUp(['n1', 'n3']);
    const failedWhenMarkedDown = load.result.failed;
    await untilServed(load.result, 300);
    const failedAfterMarkedDown = load.result.failed - failedWhenMarkedDown;
    await victim.restart();
    await cluster.untilUp(['n1', 'n2', 'n3']);
    await untilServed(load.result, 150);
    const result = await load.stop();
    t.diagnostic(
      `SIGKILL of ${victim.name} under load: ${result.ok} answered, ${result.failed} failed ` +
        `(${failedWhenMarkedDown} before HAProxy marked it down, ${failedAfterMarkedDown} after; ` +
        `${result.resets} resets): ${result.errors.slice(0, 5).join('; ')}`,
    );
    assert.ok(result.failed <= inFlightAtMost, `${result.failed} failed, more than ${inFlightAtMost} in flight`);
    assert.equal(failedAfterMarkedDown, 0, 'nothing fails once the node is out of the rotation');
  } finally {
    await load.stop();
  }
  // Rejoined: fresh connections through HAProxy go round robin, so one of three lands on the restarted node.
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const fresh = new ClusterEndpoint(cluster.haproxy.port, cluster.balanced.ca);
    const id = randomUUID();
    const me = await fresh.request('GET', ME, { token, headers: { 'x-request-id': id } });
    await fresh.close();
    assert.equal(me.status, 200, me.text);
    ids.push(id);
  }
  await victim.served.waitForLine(new RegExp(`"req_id":"(${ids.join('|')})".*"status":200`), 5000);
});

test('a logout and a tuple delete on one node hold on the others within 1 s', async (t) => {
  const [first, ...others] = nodes as [ClusterNode, ...ClusterNode[]];
  const admin = await first.endpoint.adminToken();
  const created = await first.endpoint.request('PUT', '/api/authz/subjects/cluster-reader', {
    token: admin,
    json: { password: 'cluster-reader-pw' },
  });
  assert.equal(created.status, 201, created.text);
  const token = await first.endpoint.login('cluster-reader', 'cluster-reader-pw');
  // Every node has the token's principal cached before the logout: the revocation must reach the cache too.
  for (const node of others) assert.equal((await node.endpoint.request('GET', ME, { token })).status, 200);
  assert.equal((await first.endpoint.request('POST', '/api/auth/logout', { token })).status, 200);
  for (const node of others) {
    const heldAfter = await within(
      1000,
      async () => (await node.endpoint.request('GET', ME, { token })).status === 401,
    );
    assert.notEqual(heldAfter, null, `${node.name} still accepts a logged-out session after 1 s`);
    t.diagnostic(`logout on ${first.name} held on ${node.name} after ${heldAfter} ms`);
  }
  const tuple = {
    subject: { namespace: 'user', id: created.json.id },
    relation: 'viewer',
    object: { namespace: 'dataset', id: 'cluster-nodes-dataset' },
  };
  const check = async (node: ClusterNode) =>
    (await node.endpoint.request('POST', '/api/auth/check', { token: admin, json: tuple })).json.allow as boolean;
  assert.equal((await first.endpoint.request('POST', '/api/auth/tuples', { token: admin, json: tuple })).status, 204);
  for (const node of others) {
    const granted = await within(1000, () => check(node));
    assert.notEqual(granted, null, `${node.name} does not see the new tuple after 1 s`);
  }
  assert.equal((await first.endpoint.request('DELETE', '/api/auth/tuples', { token: admin, json: tuple })).status, 204);
  for (const node of others) {
    const heldAfter = await within(1000, async () => !(await check(node)));
    assert.notEqual(heldAfter, null, `${node.name} still allows a deleted tuple after 1 s`);
    t.diagnostic(`tuple delete on ${first.name} held on ${node.name} after ${heldAfter} ms`);
  }
});

test('a mesh peer paired through HAProxy is served by every node, and every node reaches it', async (t) => {
  const peer = await startPeer(t, 'cluster-peer', {
    federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true },
  });
  const pair = await pairForMesh(peer, cluster.balanced, null);
  const peerSub = (await peer.request('GET', ME, { token: await peer.adminToken() })).json.sub as string;
  const externalId = await allow(pair, peerSub);
  // HAProxy balances connections, not requests, and the peer keeps its connection alive: each round starts the peer
  // again, so its first request opens a new connection, which HAProxy gives to the next node in turn.
  const servedPerNode = nodes.map(() => 0);
  for (let round = 0; round < 6 && servedPerNode.includes(0); round++) {
    if (round > 0) await peer.restart();
    const token = await peer.adminToken();
    // The caller's request id travels with each request and names it in the access line of the node that served it.
    const ids = Array.from({ length: 4 }, () => randomUUID());
    const answers = await Promise.all(
      ids.map((id) =>
        peer.request('GET', `/api/mesh/${pair.sourceFedId}${ME}`, { token, headers: { 'x-request-id': id } }),
      ),
    );
    for (const answer of answers) {
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.username, externalId);
    }
    const meshLines = (node: ClusterNode) =>
      node.served
        .output()
        .split('\n')
        .filter((line) => ids.some((id) => line.includes(`"req_id":"${id}"`)) && line.includes('"status":200')).length;
    // Access lines are flushed each second: every answer has its line on exactly one node.
    const flushed = await within(3000, async () => sum(nodes.map(meshLines)) === answers.length);
    assert.notEqual(flushed, null, `access lines of round ${round}: ${nodes.map(meshLines)}`);
    for (const [i, node] of nodes.entries()) servedPerNode[i] = (servedPerNode[i] ?? 0) + meshLines(node);
  }
  t.diagnostic(`mesh requests from the peer served per node: ${servedPerNode.join(', ')}`);
  assert.ok(!servedPerNode.includes(0), `every node serves the peer: ${servedPerNode}`);

  // The other way: every node signs for the cluster and reaches the peer at the address pairing gave it.
  const back = reversed(pair);
  const clusterToken = await cluster.balanced.adminToken();
  const clusterSub = (await cluster.balanced.request('GET', ME, { token: clusterToken })).json.sub as string;
  const clusterExternalId = await allow(back, clusterSub);
  for (const node of nodes) {
    const me = await node.endpoint.request('GET', `/api/mesh/${back.sourceFedId}${ME}`, { token: clusterToken });
    assert.equal(me.status, 200, `${node.name}: ${me.text}`);
    assert.equal(me.json.username, clusterExternalId);
  }

  // The attacker who captured a signed request cannot spend it again on another node: the nonces are shared.
  const captured = craft(pair, 'GET', ME, { userId: peerSub, peerToken: await peer.adminToken() });
  const [n1, n2] = nodes as [ClusterNode, ClusterNode];
  const original = await n1.endpoint.request('GET', captured.path, { headers: captured.headers });
  assert.equal(original.status, 200, original.text);
  const replayed = await n2.endpoint.request('GET', captured.path, { headers: captured.headers });
  assert.equal(replayed.status, 403, replayed.text);
  assert.equal(replayed.json.detail.reason, 'signature_replayed');
});

test('a node with the wrong node key refuses to start and changes nothing in the database', async (t) => {
  // Its own database, with one node that made the cluster identity and stopped: nothing else writes meanwhile.
  const database = await freshPostgresDatabase();
  const dirs = [1, 2].map(() => mkdtempSync(join(tmpdir(), 'meshgate-node-')));
  t.after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const [founderDir, wrongDir] = dirs as [string, string];
  const founder = await serveNode(founderDir, { database, nodeKeyFile: testNodeKeyFile() }, 0);
  assert.equal(await founder.stop('SIGTERM'), 0);
  const wrongKeyFile = join(wrongDir, 'wrong.key');
  writeFileSync(wrongKeyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
  const postgres = await testPostgres();
  // Every row of every table; the dump's \restrict lines carry a random key of each run (pg_dump's own guard).
  const dump = async () =>
    (await run(join(postgres.binDir, 'pg_dump'), ['--data-only', database])).stdout.replace(
      /^\\(un)?restrict .*$/gm,
      '',
    );
  const before = await dump();
  assert.match(before, /COPY public\.cluster_files/, 'the founder published the identity');
  const env = { PLATFORM_DATABASE_URL: database, PLATFORM_NODE_KEY_FILE: wrongKeyFile };
  const args = ['serve', '--data-dir', join(wrongDir, 'data'), '--https-port', '0', '--hostname', CLUSTER_HOSTNAME];
  await assert.rejects(execMeshgate(args, env), (error: { code: number; stderr: string; stdout: string }) => {
    assert.equal(error.code, 1);
    assert.match(error.stderr, /this node key does not open the cluster identity in the database/);
    assert.doesNotMatch(error.stdout, /meshgate listening/);
    return true;
  });
  assert.ok((await dump()) === before, 'the database is as it was');
});
