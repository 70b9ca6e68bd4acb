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
import type { Plane } from './plane.ts';
import { RequestCounts } from './traffic.ts';

export interface ProxyObservability {
  readonly tracing: Tracing;
  readonly inFlight: Gauge<'deployment'>;
  readonly errors: Counter<'deployment' | 'reason'>;
  readonly requests: RequestCounts;
  /** Retries by deployment and cause; `budget_exhausted` counts the ones the budget refused. */
  readonly retries: Counter<'deployment' | 'cause'>;
  /** Declares the per-replica and queue gauges over the planes (plane.ts) once they exist. */
  declarePlanes(planes: () => Iterable<[string, Plane]>): void;
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
    retries: metrics.counter({
      name: 'upstream_retries_total',
      help:
        'Attempts sent again to another replica, by deployment and cause (connect, reset, dropped, status); ' +
        '`budget_exhausted`: retries the retry budget refused.',
      labels: ['deployment', 'cause'],
    }),
    declarePlanes(planes) {
      metrics.gauge({
        name: 'upstream_replica_in_rotation',
        help:
          'Processes that send traffic to each replica (by deployment and replica index): not ejected by the ' +
          'probes nor by their own outlier detection.',
        labels: ['deployment', 'replica'],
        collect(gauge) {
          gauge.reset();
          for (const [label, plane] of planes())
            for (const replica of plane.balancer.replicas)
              gauge.labels(label, String(replica.index)).set(replica.routable() ? 1 : 0);
        },
      });
      metrics.gauge({
        name: 'upstream_requests_queued',
        help: 'Requests waiting for a slot of a full deployment (max_concurrent), by deployment.',
        labels: ['deployment'],
        collect(gauge) {
          gauge.reset();
          for (const [label, plane] of planes()) gauge.labels(label).set(plane.gate.waiting);
        },
      });
    },
    errors: metrics.counter({
      name: 'upstream_errors_total',
      help:
        'Proxied requests the upstream failed or the gateway refused, by deployment and reason ' +
        '(stream_aborted once the answer had begun; upstream_busy, no_healthy_upstream, rate_limited).',
      labels: ['deployment', 'reason'],
    }),
  };
}
