/**
 * What every request records, begun by the accessLog stage and ended when
 * the response closes: its span (continuing the caller's trace) and its
 * duration in `meshgate_http_request_duration_seconds` by service, route
 * template and status class. The route label is the matched pattern
 * (`/cluster/jobs/:job_id/status`), `/` for a service mount or an RPC, and
 * `unmatched` before a route is known, so neither ids nor paths reach a
 * label.
 */
import type { Histogram } from 'prom-client';
import type { RequestContext } from '../http/context.ts';
import { DURATION_BUCKETS, type MetricsRegistry, statusClass } from './metrics.ts';
import type { Tracing } from './tracing.ts';

export interface RequestObserver {
  begin(ctx: RequestContext): void;
  end(ctx: RequestContext): void;
}

export const REQUEST_DURATION = {
  name: 'http_request_duration_seconds',
  help:
    'Requests by service, route template and status class: time from ' +
    'arrival until the response closed (_count is the rate).',
  labels: ['service', 'route', 'status_class'],
  buckets: DURATION_BUCKETS,
} as const;

export function createRequestObserver(metrics: MetricsRegistry, tracing: Tracing): RequestObserver {
  const duration = metrics.histogram(REQUEST_DURATION);
  // prom-client hashes the label set on every observe; one child per series, looked up by a short key, costs less.
  const series = new Map<string, Histogram.Internal<string>>();
  return {
    begin(ctx) {
      ctx.span = tracing.serverSpan(ctx.method, ctx.req.headers);
    },
    end(ctx) {
      const service = ctx.service ?? 'none';
      const route = ctx.route?.def.path ?? 'unmatched';
      const status = ctx.res.statusCode;
      const statusLabel = statusClass(status);
      const key = `${service} ${route} ${statusLabel}`;
      let child = series.get(key);
      if (!child) {
        child = duration.labels(service, route, statusLabel);
        series.set(key, child);
      }
      child.observe(Number(process.hrtime.bigint() - ctx.startedAt) / 1e9);
      if (!tracing.recording) return;
      const span = ctx.span;
      span.updateName(`${ctx.method} ${route}`);
      span.setAttributes({
        'http.request.method': ctx.method,
        'http.route': route,
        'http.response.status_code': status,
        'meshgate.service': service,
        'meshgate.request_id': ctx.requestId,
      });
      tracing.end(span, status >= 500 ? { reason: `http_${status}` } : undefined);
    },
  };
}
