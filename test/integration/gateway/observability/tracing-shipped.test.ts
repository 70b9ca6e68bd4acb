/**
 * Tracing from gateway processes (test/helpers/workers.ts `serve`: the bundle
 * bin/meshgate runs, or the shipped executable), whose OTLP exporter runs
 * bundled: two federated gateways export to a receiver that decodes every
 * request with the OpenTelemetry protocol's definitions
 * (test/helpers/peers/otlp.ts), and one mesh request is one trace across
 * both. A collector that cannot be reached is logged, rate-limited and
 * without the endpoint's credentials, and counted on the admin listener.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { ClusterEndpoint } from '../../../helpers/cluster.ts';
import type { After } from '../../../helpers/gateway.ts';
import { allow, pairForMesh } from '../../../helpers/mesh.ts';
import { type ReceivedSpan, startOtlpReceiver } from '../../../helpers/peers/otlp.ts';
import { parsePrometheus, total } from '../../../helpers/peers/prometheus.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { ADMIN_PASSWORD, freePort, type Served, serve } from '../../../helpers/workers.ts';

interface Started {
  served: Served;
  endpoint: ClusterEndpoint;
}

/** Gateway processes named `<name>` (cluster name, and hostname `<name>.test`), each on a data dir of its own. */
function gateways(t: After) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-tracing-'));
  const started: Started[] = [];
  t.after(async () => {
    for (const { served, endpoint } of started) {
      await endpoint.close();
      await served.killTree();
    }
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  return async (name: string, env: Record<string, string>): Promise<Started> => {
    const hostname = `${name}.test`;
    const args = ['--https-port', '0', '--bind', '127.0.0.1', '--hostname', hostname, '--log-level', 'info'];
    const served = await serve(join(dir, name), args, {
      PLATFORM_CLUSTER_NAME: name,
      PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
      // Paired in peer_kc mode (no shared realm), as the federation tests pair them.
      PLATFORM_ALLOW_UNTRUSTED_FEDERATION: 'true',
      ...env,
    });
    const endpoint = new ClusterEndpoint(Number(new URL(served.base).port), served.ca, hostname);
    const gateway = { served, endpoint };
    started.push(gateway);
    return gateway;
  };
}

/** The JSON log lines of a gateway's stdout whose `msg` is `msg`. */
function logLines(served: Served, msg: string): Record<string, unknown>[] {
  return served
    .output()
    .split('\n')
    .filter((line) => line.includes(`"msg":${JSON.stringify(msg)}`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

test('one mesh request between two gateway processes is one exported trace, named in the access line', async (t) => {
  const otlp = await startOtlpReceiver(t);
  const start = gateways(t);
  const a = await start('trace-a', { PLATFORM_OTLP_ENDPOINT: otlp.url });
  const b = await start('trace-b', { PLATFORM_OTLP_ENDPOINT: otlp.url });
  const pair = await pairForMesh(a.endpoint, b.endpoint, null);
  const token = await a.endpoint.adminToken();
  await allow(pair, (await a.endpoint.request('GET', '/api/auth/users/me', { token })).json.sub);

  const requestId = randomUUID();
  const me = await a.endpoint.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token,
    headers: { 'x-request-id': requestId },
  });
  assert.equal(me.status, 200, me.text);

  const cluster = (span: ReceivedSpan) => span.resource['meshgate.cluster'];
  const trace = await otlp.until((spans) => {
    const entry = spans.find((s) => cluster(s) === 'trace-a' && s.attributes['meshgate.request_id'] === requestId);
    const inTrace = spans.filter((s) => s.traceId === entry?.traceId);
    const hop = inTrace.find((s) => cluster(s) === 'trace-a' && s.name === 'mesh.hop');
    const served = inTrace.find((s) => cluster(s) === 'trace-b' && s.name === 'GET /auth/users/me');
    return entry && hop && served ? { entry, hop, served } : undefined;
  });
  assert.equal(trace.entry.name, 'GET /mesh/:selector/*remote');
  assert.equal(trace.entry.kind, 'SPAN_KIND_SERVER');
  assert.equal(trace.entry.parentSpanId, '', 'a request without traceparent starts the trace');
  assert.equal(trace.entry.resource['service.name'], 'meshgate');
  assert.equal(trace.hop.kind, 'SPAN_KIND_CLIENT');
  assert.equal(trace.hop.parentSpanId, trace.entry.spanId, 'the hop is a child of the request');
  assert.equal(trace.hop.attributes['http.response.status_code'], 200);
  assert.equal(trace.served.kind, 'SPAN_KIND_SERVER');
  assert.equal(trace.served.parentSpanId, trace.hop.spanId, 'the peer continues from the hop');
  assert.equal(trace.served.resource['service.name'], 'meshgate');
  assert.deepEqual(otlp.rejected, [], 'every export request decoded');

  for (const gateway of [a, b])
    assert.deepEqual(logLines(gateway.served, 'span export failed; its spans are dropped'), []);
  const access = JSON.parse(await a.served.waitForLine(new RegExp(`"req_id":"${requestId}"`), 10_000));
  assert.equal(access.trace_id, trace.entry.traceId, 'the access line names the trace');
});

test('an unreachable collector is logged at most once a minute, without its credentials, and counted', async (t) => {
  const start = gateways(t);
  const closedPort = await freePort();
  const secret = 'collector-secret-0123456789';
  const { served, endpoint } = await start('trace-down', {
    PLATFORM_OTLP_ENDPOINT: `http://otlp:${secret}@127.0.0.1:${closedPort}/v1/traces?token=${secret}`,
    PLATFORM_ADMIN_PORT: '0',
  });
  // The process that holds the admin listener names it: the primary, under the unit's workers.
  const admin = /"admin":"(http:[^"]+)"/.exec(await served.waitForLine(/"admin":"http:/))?.[1] as string;
  const scrape = async () =>
    total(
      await parsePrometheus(await (await request(`${admin}/metrics`)).body.text()),
      'meshgate_trace_export_failures_total',
      { reason: 'unreachable' },
    );

  // Each round of requests is a batch of spans, exported (and failing) in turn: two failures, one log line.
  let round = 0;
  await waitFor(
    async () => {
      round += 1;
      if (round <= 200) assert.equal((await endpoint.request('GET', '/api/ping')).status, 200);
      return (await scrape()) >= 2;
    },
    { timeoutMs: 90_000, intervalMs: 250, what: 'two failed exports counted' },
  );
  await served.waitForLine(/span export failed/, 5000);
  const [logged, ...more] = logLines(served, 'span export failed; its spans are dropped');
  assert.deepEqual(more, [], 'one line a minute at most');
  assert.equal(logged?.endpoint, `http://127.0.0.1:${closedPort}/v1/traces`);
  assert.equal(logged?.reason, 'unreachable');
  assert.equal(logged?.code, 'ECONNREFUSED');
  assert.equal(logged?.failures_not_logged, 0);
  assert.equal(logged?.level, 50, 'logged as an error');
  assert.doesNotMatch(served.output(), new RegExp(secret), 'the endpoint credentials are never logged');
});
