/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) and OpenTelemetry
 * spans, one tracer per gateway. Every request belongs to a trace: a valid
 * inbound `traceparent` is continued, else a new trace starts; the next hop
 * (an upstream, a mesh peer) receives this gateway's span as its parent.
 *
 * Spans are recorded only when an OTLP/HTTP endpoint is configured; they go
 * out in batches as OTLP JSON (the exporter's default encoding), by
 * tracing-export.ts, which is loaded only then; a failed export is counted
 * (`meshgate_trace_export_failures_total`) and logged. Without an
 * endpoint each request still gets a fresh span id, so the traceparent it
 * passes on is valid and names this hop, but nothing is built or kept per
 * span beyond the ids (the proxy's per-request budget, bench/README.md).
 * Parents are passed explicitly (RequestContext.span), not through an async
 * context manager, which would cost every request whether tracing or not.
 */
import { randomFillSync } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import {
  type Attributes,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.ts';
import type { MetricsRegistry } from './metrics.ts';

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
export function headersFor(span: Span): Record<string, string> {
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  if (traceId === INVALID_SPAN_CONTEXT.traceId) return {};
  const traceparent = `00-${traceId}-${spanId}-${traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
  return traceState ? { traceparent, tracestate: traceState.serialize() } : { traceparent };
}

/** Where the exporting tracer counts and reports the exports that failed. */
export interface TracingDeps {
  readonly metrics: MetricsRegistry;
  readonly logger: Logger;
}

/** The exporting tracer (tracing-export.ts) and its OpenTelemetry SDK load only when an endpoint is configured. */
export async function createTracing(config: Readonly<Config>, deps: TracingDeps): Promise<Tracing> {
  const endpoint = config.tracing.otlpEndpoint;
  if (endpoint === null) return idsOnlyTracing();
  const { recordingTracing } = await import('./tracing-export.ts');
  return recordingTracing(config, endpoint, deps);
}

/**
 * Random trace and span ids as W3C Trace Context writes them (16 and 8 bytes in lowercase hex, never all zeros, which
 * means invalid), cut from a pool of random bytes refilled once per 4 KiB: one refill per ~170 requests. The SDK's
 * generator would load the OpenTelemetry SDK at every start for these two functions (tracing-export.ts has the rest).
 */
export function randomIds(): { generateTraceId(): string; generateSpanId(): string } {
  const pool = Buffer.alloc(4096);
  let used = pool.length;
  const hex = (bytes: number): string => {
    if (used + bytes > pool.length) {
      randomFillSync(pool);
      used = 0;
    }
    const id = pool.toString('hex', used, used + bytes);
    used += bytes;
    return /^0+$/.test(id) ? hex(bytes) : id;
  };
  return { generateTraceId: () => hex(16), generateSpanId: () => hex(8) };
}

/**
 * Fresh ids per request, the caller's trace and sampled flag kept: a hop that passes the trace on without recording.
 */
export function idsOnlyTracing(): Tracing {
  const ids = randomIds();
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
