/**
 * Tracing across the mesh: two federated gateways export OTLP/HTTP to a
 * receiver that decodes every request with the OpenTelemetry protocol's
 * definitions (test/helpers/peers/otlp.ts). One mesh request, sent with the
 * caller's traceparent, yields one trace: the source's request span, its mesh
 * hop, and the receiver's request span as the hop's child — the signature
 * still valid (the receiver answers 200 as the brokered user). The signature
 * outcomes are counted by peer on both sides. (tracing-shipped.test.ts runs
 * the same through gateway processes.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { startPeer } from '../../../helpers/federation.ts';
import { allow, craft, pairForMesh } from '../../../helpers/mesh.ts';
import { startOtlpReceiver } from '../../../helpers/peers/otlp.ts';
import { parsePrometheus, total } from '../../../helpers/peers/prometheus.ts';

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

  const trace = await otlp.until((spans) => {
    const inTrace = spans.filter((s) => s.traceId === traceId);
    const from = (cluster: string, name: string) =>
      inTrace.find((s) => s.resource['meshgate.cluster'] === cluster && s.name === name);
    const hop = from('trace-a', 'mesh.hop');
    const served = from('trace-b', 'GET /auth/users/me');
    const entry = from('trace-a', 'GET /mesh/:selector/*remote');
    return hop && served && entry ? { hop, served, entry } : undefined;
  });
  assert.equal(trace.entry.parentSpanId, callerSpan, "the source continues the caller's trace");
  assert.equal(trace.hop.parentSpanId, trace.entry.spanId, 'the hop is a child of the request');
  assert.equal(trace.served.parentSpanId, trace.hop.spanId, 'the peer continues from the hop');
  assert.equal(trace.entry.kind, 'SPAN_KIND_SERVER');
  assert.equal(trace.hop.kind, 'SPAN_KIND_CLIENT');
  assert.deepEqual(otlp.rejected, [], 'every export request decoded');
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
