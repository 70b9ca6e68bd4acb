/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) and OpenTelemetry
 * spans, one tracer per gateway. Every request belongs to a trace: a valid
 * inbound `traceparent` is continued, else a new trace starts; the next hop
 * (an upstream, a mesh peer) receives this gateway's span as its parent.
 *
 * Spans are recorded only when an OTLP/HTTP endpoint is configured; they go
 * out in batches as OTLP JSON (the exporter's default encoding). Without an
 * endpoint each request still gets a fresh span id, so the traceparent it
 * passes on is valid and names this hop, but nothing is built or kept per
 * span beyond the ids (the proxy's per-request budget, bench/README.md).
 * Parents are passed explicitly (RequestContext.span), not through an async
 * context manager, which would cost every request whether tracing or not.
 */
import type { IncomingHttpHeaders } from 'node:http';
import {
  type Attributes,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config/schema.ts';

export { type Span, SpanKind };

/** A span that records nothing and names no trace: what a context holds before its request span exists. */
export const NO_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export interface Tracing {
  /** True when spans are recorded and exported (an OTLP endpoint is set). */
  readonly recording: boolean;
  /** The span of an inbound request: a child of its valid `traceparent`, else the root of a new trace. */
  serverSpan(name: string, headers: IncomingHttpHeaders, attributes?: Attributes): Span;
  /**
   * A child of `parent`. Not recording, the parent itself: there is nothing to record, and its ids serve the next hop.
   */
  child(name: string, parent: Span, kind?: SpanKind, attributes?: Attributes): Span;
  /** `traceparent` (and `tracestate` when there is one) that make the next hop a child of `span`; {} for no trace. */
  headersFor(span: Span): Record<string, string>;
  /** Ends `span` with an error status when `error` is set. */
  end(span: Span, error?: unknown): void;
  /** Runs `work` in a child span of `parent`, ended when `work` settles (with its error, if it throws). */
  inSpan<T>(
    name: string,
    parent: Span,
    work: (span: Span) => Promise<T>,
    kind?: SpanKind,
    attributes?: Attributes,
  ): Promise<T>;
  /** Exports what is pending, then stops. */
  close(): Promise<void>;
}

const propagator = new W3CTraceContextPropagator();
const getter = {
  keys: (carrier: IncomingHttpHeaders) => Object.keys(carrier),
  get: (carrier: IncomingHttpHeaders, key: string) => carrier[key],
};

/** The caller's trace context, when its `traceparent` is well-formed (the propagator validates it). */
export function inboundContext(headers: IncomingHttpHeaders): SpanContext | undefined {
  if (headers.traceparent === undefined) return undefined;
  return trace.getSpanContext(propagator.extract(ROOT_CONTEXT, headers, getter));
}

/** Written directly (version 00, the sampled bit only): the propagator's generic inject costs the proxy more. */
function headersFor(span: Span): Record<string, string> {
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  if (traceId === INVALID_SPAN_CONTEXT.traceId) return {};
  const traceparent = `00-${traceId}-${spanId}-${traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
  return traceState ? { traceparent, tracestate: traceState.serialize() } : { traceparent };
}

export function createTracing(config: Readonly<Config>): Tracing {
  return config.tracing.otlpEndpoint === null ? idsOnlyTracing() : recording(config, config.tracing.otlpEndpoint);
}

/**
 * Fresh ids per request, the caller's trace and sampled flag kept: a hop that passes the trace on without recording.
 */
export function idsOnlyTracing(): Tracing {
  const ids = new RandomIdGenerator();
  return {
    recording: false,
    serverSpan(_name, headers) {
      const inbound = inboundContext(headers);
      return trace.wrapSpanContext({
        traceId: inbound?.traceId ?? ids.generateTraceId(),
        spanId: ids.generateSpanId(),
        traceFlags: inbound?.traceFlags ?? TraceFlags.NONE,
        ...(inbound?.traceState ? { traceState: inbound.traceState } : {}),
      });
    },
    child: (_name, parent) => parent,
    headersFor,
    end() {},
    inSpan: (_name, parent, work) => work(parent),
    async close() {},
  };
}

function recording(config: Readonly<Config>, endpoint: string): Tracing {
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
