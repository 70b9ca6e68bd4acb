/**
 * What the runtime proxy records: requests (traffic.ts keeps the counts), requests in flight and failures by
 * deployment, and each upstream pool's connections at scrape time. The
 * `deployment` label is the deployment id (or the service name for the
 * frontend, notebooks and admin compute): bounded by what administrators
 * registered. A pool serves one upstream origin; deployments sharing an
 * origin share its pool, which is reported under one of them. A deployment deleted leaves every series
 * (`forget`): the label set stays bounded by the deployments that exist, not by all that ever did.
 */
import type { Counter } from 'prom-client';
import type { Pool } from 'undici';
import type { MetricsRegistry } from '../../gateway/observability/metrics.ts';
import type { Tracing } from '../../gateway/observability/tracing.ts';
import type { Plane } from './plane.ts';
import { RequestCounts } from './traffic.ts';

/** Requests in flight to one deployment: a plain count, read at each scrape. */
interface InFlightCell {
  value: number;
  inc(): void;
  dec(): void;
}

/** How often a forgotten deployment's requests still in flight are checked for having ended. */
const FORGET_CHECK_MS = 1000;

export interface ProxyObservability {
  readonly tracing: Tracing;
  readonly inFlight: { labels(deployment: string): { inc(): void; dec(): void } };
  readonly errors: Counter<'deployment' | 'reason'>;
  readonly requests: RequestCounts;
  /** Retries by deployment and cause; `budget_exhausted` counts the ones the budget refused. */
  readonly retries: Counter<'deployment' | 'cause'>;
  /** Declares the per-replica and queue gauges over the planes (plane.ts) once they exist. */
  declarePlanes(planes: () => Iterable<[string, Plane]>): void;
  /**
   * Drops a deleted deployment's series; again once `busy` (its requests still in flight) turns false, since what
   * those count as they end (a stream cut, a retry) would bring the series back.
   */
  forget(deployment: string, busy: () => boolean): void;
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
  const inFlight = new Map<string, InFlightCell>();
  metrics.gauge({
    name: 'upstream_requests_in_flight',
    help: 'Proxied requests in flight to the upstream, by deployment.',
    labels: ['deployment'],
    collect(gauge) {
      gauge.reset();
      for (const [deployment, cell] of inFlight) gauge.labels(deployment).set(cell.value);
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
  const retries = metrics.counter({
    name: 'upstream_retries_total',
    help:
      'Attempts sent again to another replica, by deployment and cause (connect, reset, dropped, status); ' +
      '`budget_exhausted`: retries the retry budget refused.',
    labels: ['deployment', 'cause'],
  });
  const errors = metrics.counter({
    name: 'upstream_errors_total',
    help:
      'Proxied requests the upstream failed or the gateway refused, by deployment and reason ' +
      '(stream_aborted once the answer had begun; upstream_busy, no_healthy_upstream, rate_limited).',
    labels: ['deployment', 'reason'],
  });
  const drop = async (deployment: string) => {
    requests.forget(deployment);
    inFlight.delete(deployment);
    for (const counter of [errors, retries] as Counter<string>[])
      for (const { labels } of (await counter.get()).values)
        if (labels.deployment === deployment) counter.remove(labels as Record<string, string>);
  };
  return {
    tracing,
    requests,
    inFlight: {
      labels(deployment) {
        let cell = inFlight.get(deployment);
        if (!cell) {
          const made: InFlightCell = {
            value: 0,
            inc: () => void made.value++,
            dec: () => void made.value--,
          };
          cell = made;
          inFlight.set(deployment, cell);
        }
        return cell;
      },
    },
    retries,
    errors,
    forget(deployment, busy) {
      void drop(deployment);
      if (!busy()) return;
      const check = setInterval(() => {
        if (busy()) return;
        clearInterval(check);
        void drop(deployment);
      }, FORGET_CHECK_MS);
      check.unref();
    },
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
  };
}
