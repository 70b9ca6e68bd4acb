/**
 * What the runtime proxy records: requests in flight and failures by
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

export interface ProxyObservability {
  readonly tracing: Tracing;
  readonly inFlight: Gauge<'deployment'>;
  readonly errors: Counter<'deployment' | 'reason'>;
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
  return {
    tracing,
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
