/**
 * The recording tracer: spans batched and sent as OTLP JSON to the configured
 * endpoint (tracing.ts creates it only then, so a gateway without an endpoint
 * never loads the OpenTelemetry SDK and exporter). A failed export is counted
 * and logged (rate-limited): the SDK itself only tells its diagnostic logger,
 * which nothing reads, so a collector that is down would otherwise lose every
 * span in silence.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config/schema.ts';
import { ReportThrottle } from './report-throttle.ts';
import { headersFor, inboundContext, type Tracing, type TracingDeps } from './tracing.ts';

/** One log line a minute at most while exports keep failing; the counter has every failure. */
export const EXPORT_FAILURE_LOG_INTERVAL_MS = 60_000;

export type ExportFailureReason = 'unreachable' | 'timeout' | 'rejected' | 'other';

/** What a log line may say about a failed export: bounded, and nothing the collector or a caller sent. */
export interface ExportFailure {
  readonly reason: ExportFailureReason;
  /** The error's class (`Error`, `OTLPExporterError`, `TypeError`, …). */
  readonly error: string;
  /** The system error code of a failed connection (`ECONNREFUSED`, …). */
  readonly code?: string;
  /** The collector's HTTP status, when it answered with one. */
  readonly status?: number;
}

/**
 * Classifies what the OTLP exporter reports (its transport, @opentelemetry/otlp-exporter-base): a failed connection
 * carries Node's system error code; an answer outside 2xx is an OTLPExporterError whose `code` is the HTTP status
 * (or none, for a retryable status that outlived the retries); a request past its timeout is the transport's own
 * `Request timed out` error.
 */
export function exportFailure(error: unknown): ExportFailure {
  if (!(error instanceof Error)) return { reason: 'other', error: typeof error };
  const { name } = error;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return { reason: code === 'ETIMEDOUT' ? 'timeout' : 'unreachable', error: name, code };
  if (name === 'OTLPExporterError')
    return { reason: 'rejected', error: name, ...(typeof code === 'number' && { status: code }) };
  if (error.message === 'Request timed out') return { reason: 'timeout', error: name };
  return { reason: 'other', error: name };
}

/** The endpoint as a log line may show it: no user, password or query, which could hold a credential. */
export function endpointForLog(endpoint: string): string {
  const url = new URL(endpoint);
  return `${url.origin}${url.pathname}`;
}

/** `exporter`, with each failed export counted and reported through the throttle. */
export function reportingFailures(
  exporter: SpanExporter,
  endpoint: string,
  { metrics, logger }: TracingDeps,
  throttle = new ReportThrottle(EXPORT_FAILURE_LOG_INTERVAL_MS),
): SpanExporter {
  const failures = metrics.counter({
    name: 'trace_export_failures_total',
    help: 'Span export requests to the OTLP endpoint that failed (their spans are dropped), by reason.',
    labels: ['reason'],
  });
  const where = endpointForLog(endpoint);
  return {
    export(spans, done) {
      exporter.export(spans, (result: ExportResult) => {
        if (result.code !== ExportResultCode.SUCCESS) {
          const failure = exportFailure(result.error);
          failures.inc({ reason: failure.reason });
          const heldBack = throttle.take();
          if (heldBack !== undefined)
            logger.error(
              { endpoint: where, ...failure, spans: spans.length, failures_not_logged: heldBack },
              'span export failed; its spans are dropped',
            );
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

export function recordingTracing(config: Readonly<Config>, endpoint: string, deps: TracingDeps): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'meshgate', 'meshgate.cluster': config.clusterName }),
    spanProcessors: [
      new BatchSpanProcessor(reportingFailures(new OTLPTraceExporter({ url: endpoint }), endpoint, deps), {
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
