/**
 * What the runtime proxy records: requests (traffic.ts keeps the counts), requests in flight and failures by
 * deployment, and each upstream pool's connections at scrape time. The
 * `deployment` label is the deployment id (or the service name for the
 * frontend, notebooks and admin compute): bounded by what administrators
 * registered. A pool serves one upstream origin; deployments sharing an
 * origin share its pool, which is reported under the first that used it.
 */
import type { Counter, Gauge } from 'prom-client';
import type { Pool } from 'undici';
import type { MetricsRegistry } from '../../gateway/observability/metrics.ts';
import type { Tracing } from '../../gateway/observability/tracing.ts';
import { RequestCounts } from './traffic.ts';

export interface ProxyObservability {
  readonly tracing: Tracing;
  readonly inFlight: Gauge<'deployment'>;
  readonly errors: Counter<'deployment' | 'reason'>;
  readonly requests: RequestCounts;
}

export function proxyObservability(
  metrics: MetricsRegistry,
  tracing: Tracing,
  pools: () => Iterable<[Pool, string]>,
): ProxyObservability {
  metrics.gauge({
    name: 'upstream_pool_connections',
    help:
      'Connections of each upstream pool, by deployment and state ' +
      '(connected, free, pending, running, queued requests).',
    labels: ['deployment', 'state'],
    collect(gauge) {
      gauge.reset();
      for (const [pool, deployment] of pools()) {
        const { connected, free, pending, running, queued } = pool.stats;
        for (const [state, value] of Object.entries({ connected, free, pending, running, queued }))
          gauge.labels(deployment, state).set(value);
      }
    },
  });
  const requests = new RequestCounts();
  metrics.counter({
    name: 'upstream_requests_total',
    help: 'Requests proxied to the upstream (websocket upgrades included), by deployment.',
    labels: ['deployment'],
    collect(counter) {
      counter.reset();
      for (const [deployment, cell] of requests.entries()) counter.labels(deployment).inc(cell.total);
    },
  });
  return {
    tracing,
    requests,
    inFlight: metrics.gauge({
      name: 'upstream_requests_in_flight',
      help: 'Proxied requests in flight to the upstream, by deployment.',
      labels: ['deployment'],
    }),
    errors: metrics.counter({
      name: 'upstream_errors_total',
      help:
        'Proxied requests the upstream failed, by deployment and reason ' +
        '(stream_aborted once the answer had begun).',
      labels: ['deployment', 'reason'],
    }),
  };
}
