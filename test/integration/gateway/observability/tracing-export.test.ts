/**
 * The exporter's failures, counted and logged (rate-limited): the real OTLP
 * exporter sends to a real collector on loopback that refuses every export
 * request, and the lines land in a real pino logger.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { pino } from 'pino';
import { createMetrics } from '../../../../gateway/observability/metrics.ts';
import { ReportThrottle } from '../../../../gateway/observability/report-throttle.ts';
import { reportingFailures } from '../../../../gateway/observability/tracing-export.ts';
import type { After } from '../../../helpers/gateway.ts';

/** A collector that answers every export request 400, with a body a log line must not repeat. */
async function refusingCollector(t: After): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(400, { 'content-type': 'text/plain' }).end('refused: collector-body-text'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
}

test('refused exports are each counted, and logged once an interval with how many were not', async (t) => {
  const url = await refusingCollector(t);
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const metrics = createMetrics();
  let now = 0;
  const exporter = reportingFailures(
    new OTLPTraceExporter({ url: url.replace('http://', 'http://otlp:password-in-url@') }),
    url.replace('http://', 'http://otlp:password-in-url@'),
    { metrics, logger },
    new ReportThrottle(60_000, () => now),
  );
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  t.after(() => provider.shutdown());
  const tracer = provider.getTracer('test');
  const exportOneSpan = async () => {
    tracer.startSpan('work').end();
    // The SDK's processor hands the failure to its caller as well.
    await assert.rejects(provider.forceFlush());
  };
  const failures = async () =>
    (await metrics.registry.getSingleMetric('meshgate_trace_export_failures_total')?.get())?.values ?? [];

  for (let i = 0; i < 3; i += 1) await exportOneSpan();
  assert.deepEqual(
    (await failures()).map(({ labels, value }) => [labels, value]),
    [[{ reason: 'rejected' }, 3]],
  );
  assert.equal(lines.length, 1, 'one line in the interval');
  const [first] = lines;
  assert.equal(first?.level, 50);
  assert.equal(first?.msg, 'span export failed; its spans are dropped');
  assert.equal(first?.endpoint, url, 'the endpoint, without its credentials');
  assert.equal(first?.reason, 'rejected');
  assert.equal(first?.status, 400);
  assert.equal(first?.error, 'OTLPExporterError');
  assert.equal(first?.spans, 1);
  assert.equal(first?.failures_not_logged, 0);
  assert.doesNotMatch(JSON.stringify(lines), /password-in-url|collector-body-text/);

  now = 60_000;
  await exportOneSpan();
  assert.equal(lines.length, 2, 'the next interval has its line');
  assert.equal(lines[1]?.failures_not_logged, 2, 'naming the failures not logged since the last line');
  assert.equal((await failures())[0]?.value, 4);
});
