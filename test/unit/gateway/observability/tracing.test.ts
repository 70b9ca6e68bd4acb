import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idsOnlyTracing, randomIds } from '../../../../gateway/observability/tracing.ts';

test('random ids are W3C trace and span ids, distinct across pool refills', () => {
  const ids = randomIds();
  const traces = new Set<string>();
  const spans = new Set<string>();
  // 1000 of each draws 24 000 bytes: the 4 KiB pool is refilled several times.
  for (let i = 0; i < 1000; i += 1) {
    const traceId = ids.generateTraceId();
    const spanId = ids.generateSpanId();
    assert.match(traceId, /^[0-9a-f]{32}$/);
    assert.match(spanId, /^[0-9a-f]{16}$/);
    assert.doesNotMatch(traceId, /^0+$/);
    traces.add(traceId);
    spans.add(spanId);
  }
  assert.equal(traces.size, 1000);
  assert.equal(spans.size, 1000);
});

test('without an endpoint a request continues the caller trace with a span id of its own', () => {
  const tracing = idsOnlyTracing();
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const span = tracing.serverSpan('GET', { traceparent });
  const [version, traceId, spanId, flags] = tracing.headersFor(span).traceparent?.split('-') ?? [];
  assert.deepEqual([version, traceId, flags], ['00', '4bf92f3577b34da6a3ce929d0e0e4736', '01']);
  assert.match(spanId ?? '', /^[0-9a-f]{16}$/);
  assert.notEqual(spanId, '00f067aa0ba902b7');
  const fresh = tracing.headersFor(tracing.serverSpan('GET', {})).traceparent ?? '';
  assert.match(fresh, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
});
