/**
 * The recording tracer: spans batched and sent as OTLP JSON to the configured
 * endpoint (tracing.ts creates it only then, so a gateway without an endpoint
 * never loads the OpenTelemetry SDK and exporter).
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config/schema.ts';
import { headersFor, inboundContext, type Tracing } from './tracing.ts';

export function recordingTracing(config: Readonly<Config>, endpoint: string): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'meshgate', 'meshgate.cluster': config.clusterName }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint }), {
        scheduledDelayMillis: config.tracing.exportDelayMs,
      }),
    ],
  });
  const tracer = provider.getTracer('meshgate');
  const tracing: Tracing = {
    recording: true,
    serverSpan(name, headers, attributes) {
      const inbound = inboundContext(headers);
      const parent = inbound ? trace.setSpanContext(ROOT_CONTEXT, inbound) : ROOT_CONTEXT;
      return tracer.startSpan(name, { kind: SpanKind.SERVER, ...(attributes ? { attributes } : {}) }, parent);
    },
    child(name, parent, kind = SpanKind.INTERNAL, attributes) {
      return tracer.startSpan(
        name,
        { kind, ...(attributes ? { attributes } : {}) },
        trace.setSpan(ROOT_CONTEXT, parent),
      );
    },
    headersFor,
    end(span, error) {
      if (error !== undefined) {
        const reason = (error as { reason?: unknown }).reason;
        // The stable reason only: an error's message may quote what the caller sent.
        span.setStatus({ code: SpanStatusCode.ERROR, message: typeof reason === 'string' ? reason : 'error' });
      }
      span.end();
    },
    async inSpan(name, parent, work, kind, attributes) {
      const span = tracing.child(name, parent, kind, attributes);
      try {
        const result = await work(span);
        tracing.end(span);
        return result;
      } catch (error) {
        tracing.end(span, error);
        throw error;
      }
    },
    close: () => provider.shutdown(),
  };
  return tracing;
}
