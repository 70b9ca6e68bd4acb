/**
 * A deployment's slots are shared only under contention: one caller alone gets all of them; once full, a freed slot
 * goes to the waiting caller with the fewest in flight (callers are users, or addresses for anonymous requests),
 * so a flood cannot keep anyone else from their turn; a wait ends at `queue_timeout_ms` with 503 upstream_busy.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Agent } from 'undici';
import { type After, requestAt, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { parsePrometheus, total } from '../../../helpers/peers/prometheus.ts';
import { deploy, startHoldingServer } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';

const METRICS_TOKEN = 'metrics-token-for-tests-0123456789';
const WITH_METRICS = { admin: { port: 0, metricsToken: METRICS_TOKEN } };

/** Requests of the deployment waiting for a slot (`meshgate_upstream_requests_queued`). */
async function queued(gw: TestGateway, deployment: string): Promise<number> {
  const res = await fetch(`${gw.gateway.adminUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  return total(await parsePrometheus(await res.text()), 'meshgate_upstream_requests_queued', { deployment });
}

/** An HTTP/2 client bound to `localAddress`: every request from it is one client address's. */
function clientAt(t: After, gw: TestGateway, localAddress: string): Agent {
  const agent = new Agent({ allowH2: true, localAddress, connect: { ca: gw.gateway.caPem, servername: 'localhost' } });
  t.after(() => agent.close());
  return agent;
}

test('one caller alone gets every slot: a burst of streams all reach the upstream at once', async (t) => {
  const gw = await startTestGateway(t);
  const upstream = await startHoldingServer(t);
  const app = await deploy(gw, { kind: 'app', name: 'alone', upstream: upstream.url });
  const token = await gw.adminToken();
  const burst = Array.from({ length: 300 }, () => gw.request('GET', `${app.runtime_path}/held`, { token }));
  await waitFor(() => upstream.held === 300, { timeoutMs: 20_000, what: 'all 300 held at the upstream at once' });
  upstream.release();
  const answers = await Promise.all(burst);
  assert.ok(answers.every((a) => a.status === 200 && a.text === 'held'));
});

test('under contention a freed slot goes to the caller with the fewest in flight, not to the flood', async (t) => {
  const gw = await startTestGateway(t, { ...WITH_METRICS, serving: { maxConcurrentRequests: 2 } });
  const upstream = await startHoldingServer(t);
  const app = await deploy(gw, { kind: 'app', name: 'contended', upstream: upstream.url, requires_auth: false });
  const [flooder, other] = [clientAt(t, gw, '127.0.0.1'), clientAt(t, gw, '127.0.0.2')];
  const get = (agent: Agent, path: string) => requestAt(agent, gw.url, 'GET', `${app.runtime_path}${path}`);

  let floodDone = 0;
  const flood = Array.from({ length: 8 }, () =>
    get(flooder, '/held').then((answer) => {
      floodDone++;
      return answer;
    }),
  );
  await waitFor(async () => upstream.held === 2 && (await queued(gw, app.id)) === 6, { what: 'the flood queued' });
  const waiting = get(other, '/quick');
  await waitFor(async () => (await queued(gw, app.id)) === 7, { what: 'the other address queued' });
  // One of the flood's requests ends: its slot goes to the other address (none in flight), ahead of six of the flood.
  await waitFor(() => upstream.releaseOne(), { what: 'one held request answered' });
  const answer = await waiting;
  assert.deepEqual([answer.status, answer.text], [200, 'quick']);
  assert.equal(floodDone, 1, "the other address was served while the flood's queued requests still waited");

  upstream.release();
  const answers = await Promise.all(flood);
  assert.ok(
    answers.every((a) => a.status === 200),
    'the flood was served too, in turn',
  );
});

test('two users behind one address are two callers', async (t) => {
  const gw = await startTestGateway(t, { ...WITH_METRICS, serving: { maxConcurrentRequests: 1 } });
  const upstream = await startHoldingServer(t);
  const app = await deploy(gw, { kind: 'app', name: 'nat', upstream: upstream.url, visibility: 'authenticated' });
  const [alice, bob] = [await gw.userToken('alice'), await gw.userToken('bob')];
  const aliceFlood = Array.from({ length: 3 }, () =>
    gw.request('GET', `${app.runtime_path}/held`, { token: alice.token }),
  );
  await waitFor(async () => upstream.held === 1 && (await queued(gw, app.id)) === 2, { what: "alice's flood queued" });
  const bobs = gw.request('GET', `${app.runtime_path}/quick`, { token: bob.token });
  await waitFor(async () => (await queued(gw, app.id)) === 3, { what: "bob's request queued" });
  await waitFor(() => upstream.releaseOne(), { what: "alice's first request answered" });
  assert.equal((await bobs).text, 'quick', "bob's turn came before alice's queued requests");
  upstream.release();
  await Promise.all(aliceFlood);
});

test('a wait for a full deployment ends at queue_timeout_ms with 503 upstream_busy and Retry-After', async (t) => {
  const gw = await startTestGateway(t);
  const upstream = await startHoldingServer(t);
  const app = await deploy(gw, {
    kind: 'app',
    name: 'small-model',
    upstream: upstream.url,
    max_concurrent: 1,
    queue_timeout_ms: 200,
  });
  const token = await gw.adminToken();
  const holding = gw.request('GET', `${app.runtime_path}/held`, { token });
  await waitFor(() => upstream.held === 1, { what: 'the one slot taken' });
  const busy = await gw.request('GET', `${app.runtime_path}/quick`, { token });
  assert.equal(busy.status, 503);
  assert.equal(busy.json.detail.reason, 'upstream_busy');
  assert.equal(busy.json.detail.upstream, app.id);
  assert.equal(busy.headers['retry-after'], '1');
  upstream.release();
  assert.equal((await holding).status, 200);
  assert.equal((await gw.request('GET', `${app.runtime_path}/quick`, { token })).status, 200, 'the slot is back');
});
