/**
 * A proxied request holds a slot of its deployment (fair-share.ts) and counts in the deployment's in-flight gauge
 * until it ends, however it ends: the client leaving before the answer's head, while waiting for its slot or after
 * the head, and the upstream failing before the head. With one slot, a slot not given back would leave every later
 * request waiting: the next one answering shows it came back.
 * Run with spans only propagated and with spans recorded and exported (where the proxy's span is its own step).
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { type ClientHttp2Session, connect as connectHttp2 } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connect as connectTcp } from 'node:net';
import { test } from 'node:test';
import { connect as connectTls } from 'node:tls';
import { request } from 'undici';
import { ADMIN_PASSWORD, type After, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { parsePrometheus, total } from '../../../helpers/peers/prometheus.ts';
import { deploy } from '../../../helpers/upstreams.ts';
import { waitFor } from '../../../helpers/wait.ts';

const METRICS_TOKEN = 'metrics-token-for-tests-0123456789';

async function listening(t: After, server: ReturnType<typeof createServer>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** One HTTP/2 connection: every request below competes for the deployment's one slot. */
function session(t: After, gw: TestGateway): ClientHttp2Session {
  const createConnection = () =>
    connectTls({
      socket: connectTcp({ host: '127.0.0.1', port: gw.port }),
      servername: 'localhost',
      ca: gw.gateway.caPem,
      ALPNProtocols: ['h2'],
    });
  const client = connectHttp2(`https://127.0.0.1:${gw.port}`, { createConnection });
  client.on('error', () => {});
  t.after(() => client.destroy());
  return client;
}

function open(client: ClientHttp2Session, path: string, token: string) {
  const stream = client.request({ ':path': path, authorization: `Bearer ${token}` });
  stream.on('error', () => {});
  let body = '';
  let status = 0;
  const done = new Promise<{ status: number; body: string }>((resolve) => {
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
    });
    stream.on('data', (chunk) => {
      body += chunk;
    });
    stream.on('close', () => resolve({ status, body }));
  });
  return { stream, done, gotHead: () => status !== 0 };
}

for (const recording of [false, true]) {
  const spans = recording ? 'recorded' : 'propagated';
  test(`every way a proxied request ends gives its slot and in-flight count back (spans ${spans})`, async (t) => {
    const held: ServerResponse[] = [];
    let arrived = 0;
    const upstream = await listening(
      t,
      createServer((req, res) => {
        arrived++;
        if (req.url?.endsWith('/quick')) return void res.end('quick');
        if (req.url?.endsWith('/headfirst')) {
          res.writeHead(200);
          res.write('x'.repeat(10));
        }
        held.push(res);
      }),
    );
    t.after(() => {
      for (const res of held) res.destroy();
    });
    // A receiver that takes the exported spans (OTLP over HTTP) and answers 200.
    const otlp = recording
      ? await listening(
          t,
          createServer((req, res) => req.resume().on('end', () => res.end())),
        )
      : null;
    const gw = await startTestGateway(t, {
      admin: { port: 0, metricsToken: METRICS_TOKEN },
      serving: { upstreamConnections: 4, maxConcurrentRequests: 1 },
      ...(otlp ? { tracing: { otlpEndpoint: `${otlp}/v1/traces`, exportDelayMs: 20 } } : {}),
    });
    const app = await deploy(gw, { kind: 'app', name: 'release', upstream, retries: 0 });
    const token = await gw.adminToken();
    const inFlight = async () => {
      const res = await request(`${gw.gateway.adminUrl}/metrics`, {
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      });
      return total(await parsePrometheus(await res.body.text()), 'meshgate_upstream_requests_in_flight', {
        deployment: app.id,
      });
    };
    const client = session(t, gw);
    const path = (rest: string) => `/runtime/apps/${app.id}${rest}`;
    const quick = async () =>
      assert.deepEqual(await open(client, path('/quick'), token).done, { status: 200, body: 'quick' });

    // The client leaves before the head; a second request, waiting for the slot meanwhile, leaves too.
    const first = open(client, path('/held'), token);
    await waitFor(() => arrived === 1, { timeoutMs: 5000, what: 'the first request upstream' });
    assert.equal(await inFlight(), 1);
    const waiting = open(client, path('/held'), token);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(arrived, 1, 'the second request waits for the slot');
    waiting.stream.close();
    await waiting.done;
    first.stream.close();
    await first.done;
    await waitFor(async () => (await inFlight()) === 0, { timeoutMs: 5000, what: 'in flight 0 after the leaves' });
    await quick();

    // The client leaves after the head.
    const streaming = open(client, path('/headfirst'), token);
    await waitFor(() => streaming.gotHead(), { timeoutMs: 5000, what: 'the head' });
    streaming.stream.close();
    await streaming.done;
    await waitFor(async () => (await inFlight()) === 0, { timeoutMs: 5000, what: 'in flight 0 after the head' });
    await quick();

    // The upstream fails before the head: 502 (not retried: retries 0), and the slot is back.
    const failing = open(client, path('/held'), token);
    await waitFor(() => held.length >= 3, { timeoutMs: 5000, what: 'the failing request upstream' });
    held.at(-1)?.socket?.destroy();
    assert.equal((await failing.done).status, 502);
    await quick();
    assert.equal(await inFlight(), 0);
  });
}

test('a client gone while its credential was being verified holds nothing once the request ends', async (t) => {
  let arrived = 0;
  const upstream = await listening(
    t,
    createServer((_req, res) => {
      arrived++;
      res.end('quick');
    }),
  );
  const gw = await startTestGateway(t, {
    admin: { port: 0, metricsToken: METRICS_TOKEN },
    serving: { upstreamConnections: 4, maxConcurrentRequests: 1 },
  });
  const app = await deploy(gw, { kind: 'app', name: 'gone', upstream });
  const client = session(t, gw);
  const path = `/runtime/apps/${app.id}/quick`;
  for (let i = 0; i < 5; i++) {
    // A token never presented before is verified (asynchronously) first; the stream is reset meanwhile.
    const fresh = await gw.login('admin', ADMIN_PASSWORD);
    const gone = open(client, path, fresh);
    gone.stream.close();
    await gone.done;
  }
  // Each of those ended without holding its slot: the same connection (one slot) is answered at once.
  const token = await gw.adminToken();
  for (let i = 0; i < 3; i++) assert.deepEqual(await open(client, path, token).done, { status: 200, body: 'quick' });
  const res = await request(`${gw.gateway.adminUrl}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  const metrics = await parsePrometheus(await res.body.text());
  assert.equal(total(metrics, 'meshgate_upstream_requests_in_flight', { deployment: app.id }), 0);
  assert.ok(arrived >= 3, `the upstream saw ${arrived} requests`);
});
