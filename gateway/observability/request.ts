/**
 * What every request records, begun by the accessLog stage and ended when
 * the response closes: its span (continuing the caller's trace) and its
 * duration in `meshgate_http_request_duration_seconds` by service, route
 * template, status class and deployment. The route label is the matched
 * pattern (`/cluster/jobs/:job_id/status`), `/` for a service mount or an
 * RPC, and `unmatched` before a route is known; the deployment label is the
 * id of the registered deployment a runtime request was admitted to
 * (RequestContext.deployment), empty otherwise — an id in a path that names
 * no deployment never becomes one. So neither paths nor a client's ids reach
 * a label. A deployment deleted takes its series with it (the serving domain
 * calls `remove('deployment', id)` in every process): the label set stays
 * bounded by the deployments that exist, not by all that ever did.
 */
import type { RequestContext } from '../http/context.ts';
import type { HistogramSeries } from './histogram.ts';
import { DURATION_BUCKETS, type MetricsRegistry, statusClass } from './metrics.ts';
import type { Tracing } from './tracing.ts';

export interface RequestObserver {
  begin(ctx: RequestContext): void;
  end(ctx: RequestContext): void;
}

export const REQUEST_DURATION = {
  name: 'http_request_duration_seconds',
  help:
    'Requests by service, route template, status class and deployment (the runtime deployment a request reached, ' +
    'else empty): time from arrival until the response closed (_count is the rate).',
  labels: ['service', 'route', 'status_class', 'deployment'],
  buckets: DURATION_BUCKETS,
} as const;

/** Where the requests of a deleted deployment still in flight when it went are counted: nowhere. */
const UNCOUNTED: HistogramSeries = { observe() {} };
/**
 * Deleted deployments remembered at once. A request still in flight for one deleted this many deletes ago binds its
 * series again when it ends (one series, until that deployment's id is removed again): the marks stay bounded.
 */
const RETIRED_KEPT = 1024;

export function createRequestObserver(metrics: MetricsRegistry, tracing: Tracing): RequestObserver {
  const duration = metrics.histogram(REQUEST_DURATION);
  // Series found by route, then service (strings the routing tables hold, whose hashes V8 keeps), then status class;
  // a deployment's requests by its id (the deployment row's string) first: no key is built per request.
  const byRoute = new Map<string, Map<string, HistogramSeries[]>>();
  const byDeployment = new Map<string, Map<string, Map<string, HistogramSeries[]>>>();
  const routesOf = (deployment: string | null) => {
    if (deployment === null) return byRoute;
    let routes = byDeployment.get(deployment);
    if (!routes) {
      routes = new Map();
      byDeployment.set(deployment, routes);
    }
    return routes;
  };
  // Each deleted deployment's id, with when it was deleted (performance.now(), oldest first): a request that arrived
  // before then and ends after must not bind its series again. One that arrived after and was admitted to the id
  // proves the id exists again (admission needs its row): it counts.
  const retired = new Map<string, number>();
  const admittedBeforeDelete = (ctx: RequestContext): boolean => {
    const deletedAt = ctx.deployment === null || retired.size === 0 ? undefined : retired.get(ctx.deployment);
    return deletedAt !== undefined && ctx.startedAt <= deletedAt;
  };
  const seriesOf = (ctx: RequestContext, route: string, service: string, status: number): HistogramSeries => {
    if (admittedBeforeDelete(ctx)) return UNCOUNTED;
    const deployment = ctx.deployment;
    const routes = routesOf(deployment);
    let byService = routes.get(route);
    if (!byService) {
      byService = new Map();
      routes.set(route, byService);
    }
    let byClass = byService.get(service);
    if (!byClass) {
      byClass = [];
      byService.set(service, byClass);
    }
    const at = status >= 100 && status < 600 ? Math.floor(status / 100) : 0;
    let series = byClass[at];
    if (!series) {
      series = duration.labels(service, route, statusClass(status), deployment ?? '');
      byClass[at] = series;
    }
    return series;
  };
  // A deployment's series removed (the only removal: the serving domain's, of a deleted deployment's id): its cached
  // series are dead, and requests admitted before the delete are not counted when they end.
  duration.onRemove((_label, value) => {
    byDeployment.delete(value);
    retired.delete(value);
    retired.set(value, performance.now());
    if (retired.size > RETIRED_KEPT) retired.delete(retired.keys().next().value as string);
  });
  return {
    begin(ctx) {
      ctx.span = tracing.serverSpan(ctx.method, ctx.req.headers);
    },
    end(ctx) {
      const service = ctx.service ?? 'none';
      const route = ctx.route?.def.path ?? 'unmatched';
      const status = ctx.res.statusCode;
      seriesOf(ctx, route, service, status).observe((performance.now() - ctx.startedAt) / 1e3);
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
