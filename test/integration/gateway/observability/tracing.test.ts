/**
 * Tracing across the mesh: two federated gateways export OTLP/HTTP JSON to
 * a local receiver (a real HTTP server decoding what the OpenTelemetry
 * exporter sends). One mesh request, sent with the caller's traceparent,
 * yields one trace: the source's request span, its mesh hop, and the
 * receiver's request span as the hop's child — the signature still valid
 * (the receiver answers 200 as the brokered user). The signature outcomes
 * are counted by peer on both sides.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import { startPeer } from '../../../helpers/federation.ts';
import type { After } from '../../../helpers/gateway.ts';
import { allow, craft, pairForMesh } from '../../../helpers/mesh.ts';
import { parsePrometheus, total } from '../../../helpers/peers/prometheus.ts';

interface ReceivedSpan {
  cluster: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  kind: number;
}

/** The part of an OTLP/HTTP JSON export request the test reads. */
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
    scopeSpans?: { spans?: (Omit<ReceivedSpan, 'cluster' | 'parentSpanId'> & { parentSpanId?: string })[] }[];
  }[];
}

/** Every span of one OTLP/HTTP JSON export request, with its resource's cluster name. */
function spansOf(body: OtlpExport): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const attributes = resourceSpans.resource?.attributes ?? [];
    const cluster = attributes.find((a) => a.key === 'meshgate.cluster')?.value.stringValue ?? '';
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) spans.push({ cluster, ...span, parentSpanId: span.parentSpanId ?? '' });
    }
  }
  return spans;
}

/** An OTLP/HTTP traces endpoint: every span of every JSON export request, with its resource's cluster name. */
async function startOtlpReceiver(t: After) {
  const spans: ReceivedSpan[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    assert.equal(req.url, '/v1/traces');
    assert.match(String(req.headers['content-type']), /^application\/json/);
    spans.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, spans };
}

/** Waits (bounded) until `found` sees what it needs among the received spans. */
async function until<T>(
  spans: readonly ReceivedSpan[],
  found: (spans: readonly ReceivedSpan[]) => T | undefined,
): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const result = found(spans);
    if (result !== undefined) return result;
    if (Date.now() > deadline)
      throw new Error(`spans never arrived: ${JSON.stringify(spans.map((s) => [s.cluster, s.name]))}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('one mesh request is one trace across both gateways, the peer continuing from the hop', async (t) => {
  const otlp = await startOtlpReceiver(t);
  const settings = {
    federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true },
    tracing: { otlpEndpoint: otlp.url, exportDelayMs: 20 },
    admin: { port: 0 },
  };
  const source = await startPeer(t, 'trace-a', settings);
  const receiver = await startPeer(t, 'trace-b', settings);
  const pair = await pairForMesh(source, receiver, null);
  const token = await source.adminToken();
  const admin = await source.request('GET', '/api/auth/users/me', { token });
  await allow(pair, admin.json.sub);

  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpan = '00f067aa0ba902b7';
  const me = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token,
    headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
  });
  assert.equal(me.status, 200, me.text);

  const trace = await until(otlp.spans, (spans) => {
    const inTrace = spans.filter((s) => s.traceId === traceId);
    const hop = inTrace.find((s) => s.cluster === 'trace-a' && s.name === 'mesh.hop');
    const served = inTrace.find((s) => s.cluster === 'trace-b' && s.name === 'GET /auth/users/me');
    const entry = inTrace.find((s) => s.cluster === 'trace-a' && s.name === 'GET /mesh/:selector/*remote');
    return hop && served && entry ? { hop, served, entry } : undefined;
  });
  assert.equal(trace.entry.parentSpanId, callerSpan, "the source continues the caller's trace");
  assert.equal(trace.hop.parentSpanId, trace.entry.spanId, 'the hop is a child of the request');
  assert.equal(trace.served.parentSpanId, trace.hop.spanId, 'the peer continues from the hop');
  assert.equal(trace.entry.kind, 2, 'SERVER');
  assert.equal(trace.hop.kind, 3, 'CLIENT');
});

test('mesh signatures are counted by direction, peer record and outcome', async (t) => {
  const settings = { federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true }, admin: { port: 0 } };
  const source = await startPeer(t, 'count-a', settings);
  const receiver = await startPeer(t, 'count-b', settings);
  const pair = await pairForMesh(source, receiver, null);
  const token = await source.adminToken();
  await allow(pair, (await source.request('GET', '/api/auth/users/me', { token })).json.sub);
  assert.equal((await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token })).status, 200);
  const forged = craft(pair, 'GET', '/api/auth/users/me', { userId: 'someone', psk: 'not-the-pairing-key' });
  assert.equal((await receiver.request('GET', forged.path, { headers: forged.headers })).status, 403);

  const scrape = async (gw: typeof source) =>
    parsePrometheus(await (await request(`${gw.gateway.adminUrl}/metrics`)).body.text());
  const signed = await scrape(source);
  assert.equal(
    total(signed, 'meshgate_mesh_signatures_total', { direction: 'sign', peer: pair.sourceFedId, outcome: 'ok' }),
    1,
  );
  const verified = await scrape(receiver);
  assert.equal(
    total(verified, 'meshgate_mesh_signatures_total', { direction: 'verify', peer: pair.receiverFedId, outcome: 'ok' }),
    1,
  );
  assert.equal(total(verified, 'meshgate_mesh_signatures_total', { direction: 'verify', outcome: 'hmac_mismatch' }), 1);
  assert.equal(total(verified, 'meshgate_federation_peer_state', { peer: pair.receiverFedId, state: 'PAIRED' }), 1);
});
