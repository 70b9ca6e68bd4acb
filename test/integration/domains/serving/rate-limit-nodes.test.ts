/**
 * A caller's rate limit on a cluster of two nodes sharing one PostgreSQL database: one bucket for both. Requests of
 * one user alternate between the nodes, several in flight at once, so both nodes take leases of the same bucket
 * concurrently (rate-limit.ts). The bound, from the code: a request is admitted only with a token taken from the
 * shared bucket, which starts with `burst` tokens and gains `requests_per_second` a second, so over a window of T
 * seconds at most `burst + requests_per_second × T` are admitted, whatever the leases; a lease left unspent (at most
 * `want − 1` tokens a node, `want` the lease size) is the most the callers fall short of the burst by.
 *
 * In one test process both nodes' statements run one after the other (each blocks the thread for its round trip):
 * the second test runs the lease statement from several processes at once against one bucket.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { createDeploymentStore } from '../../../../domains/serving/store.ts';
import { openConfiguredDatabase } from '../../../../gateway/db/open.ts';
import { deploymentRow } from '../../../helpers/deployments.ts';
import { freshPostgresDatabase, startTwoNodes } from '../../../helpers/engine.ts';
import type { After, TestResponse } from '../../../helpers/gateway.ts';
import { deploy, startHoldingServer } from '../../../helpers/upstreams.ts';

const TAKER = join(import.meta.dirname, '../../../helpers/token-taker.ts');

const LIMIT = { requests_per_second: 40, burst: 40 };
/** rate-limit.ts: a twentieth of the smaller of the rate and the burst, at least one. */
const LEASE = Math.max(1, Math.floor(Math.min(LIMIT.burst, LIMIT.requests_per_second) / 20));
const REQUESTS = 320;
const IN_FLIGHT = 8;

test("two nodes on one PostgreSQL database share a caller's rate limit, within the leases' bound", async (t) => {
  assert.ok(LEASE > 1, 'the limit is large enough for the nodes to lease several tokens at a time');
  const upstream = await startHoldingServer(t);
  let reached = 0;
  upstream.server.prependListener('request', () => {
    reached++;
  });
  const [a, b] = await startTwoNodes(t);
  const app = await deploy(a, {
    kind: 'model',
    name: 'shared-limit',
    upstream: upstream.url,
    visibility: 'authenticated',
    rate_limit: LIMIT,
  });
  const alice = await a.userToken('alice');

  // Request i goes to node a when i is even, to node b when odd; IN_FLIGHT lanes send them, each in turn.
  const answers: { node: 'a' | 'b'; res: TestResponse }[] = [];
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < REQUESTS; i = next++) {
      const [node, gw] = i % 2 === 0 ? (['a', a] as const) : (['b', b] as const);
      answers.push({ node, res: await gw.request('GET', `${app.runtime_path}/quick`, { token: alice.token }) });
    }
  };
  // On the gateways' own clock (Date): every take's `now` falls within this window.
  const started = Date.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  const windowSeconds = (Date.now() - started) / 1000;

  const admitted = answers.filter(({ res }) => res.status === 200);
  const refused = answers.filter(({ res }) => res.status !== 200);
  const ceiling = LIMIT.burst + LIMIT.requests_per_second * windowSeconds;
  const floor = LIMIT.burst - 2 * (LEASE - 1);
  const figures = `${admitted.length} admitted of ${REQUESTS} in ${windowSeconds.toFixed(2)} s`;
  t.diagnostic(`${figures}; ceiling ${ceiling.toFixed(1)}, floor ${floor}`);
  assert.ok(admitted.length <= ceiling, `${figures}: more than burst + rate × window (${ceiling.toFixed(1)})`);
  assert.ok(admitted.length >= floor, `${figures}: fewer than the burst less two unspent leases (${floor})`);
  assert.ok(refused.length > 0, figures);
  for (const node of ['a', 'b'] as const) {
    assert.ok(
      admitted.some((x) => x.node === node),
      `node ${node} admitted some`,
    );
    assert.ok(
      refused.some((x) => x.node === node),
      `node ${node} refused some`,
    );
  }
  for (const { res } of refused) {
    assert.equal(res.status, 429, res.text);
    assert.equal(res.json.detail.reason, 'rate_limited');
    assert.equal(res.headers['retry-after'], '1', 'the next token is at most a second away');
  }
  assert.equal(reached, admitted.length, 'a refused request never reached the upstream');
});

/** Processes that take from one bucket at once: each waits for the go, then takes `takes` times. */
async function takeTogether(t: After, args: readonly string[], processes: number) {
  const children = Array.from({ length: processes }, () => {
    const child = spawn(process.execPath, ['--import', 'tsx', TAKER, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
    t.after(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    return { child, lines: createInterface({ input: child.stdout })[Symbol.asyncIterator]() };
  });
  for (const { lines } of children) assert.equal((await lines.next()).value, 'ready');
  for (const { child } of children) child.stdin.end('go\n');
  return Promise.all(
    children.map(async ({ child, lines }) => {
      const [word, granted, least] = String((await lines.next()).value).split(' ');
      assert.equal(word, 'granted');
      if (child.exitCode === null) await once(child, 'exit');
      return { granted: Number(granted), least: Number(least) };
    }),
  );
}

test('processes taking from one bucket at once never get more than it holds (the take is atomic)', async (t) => {
  const url = await freshPostgresDatabase();
  const opened = await openConfiguredDatabase({ dataDir: '', database: url });
  t.after(() => opened.sql.close());
  createDeploymentStore(opened.db).insert(deploymentRow('bucket-under-contention'));
  // The same instant for every take: no refill, so the bucket holds exactly `burst` tokens for all of them.
  const burst = 1000;
  const takers = await takeTogether(t, [url, 'bucket-under-contention', String(burst), '200', '5', '1700000000000'], 4);
  const granted = takers.reduce((sum, x) => sum + x.granted, 0);
  assert.equal(granted, burst, `4 processes × 200 takes of 5 asked 4000; the bucket held ${burst}`);
  for (const { granted: mine, least } of takers) {
    assert.ok(mine > 0, 'every process got some');
    assert.ok(least >= 0, `tokens never went below zero (${least})`);
  }
});
