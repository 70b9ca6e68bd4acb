/** Jobs by state and runtime (`local`, `ray`), counted from the job records at each scrape. */
import type { MetricsRegistry } from '../../gateway/observability/metrics.ts';
import type { JobStore } from './store.ts';

export function observeJobs(metrics: MetricsRegistry, store: JobStore): void {
  metrics.gauge({
    name: 'jobs',
    help: 'Job records by state (PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED, ...) and runtime.',
    labels: ['state', 'runtime'],
    across: 'first',
    collect(gauge) {
      gauge.reset();
      for (const { status, runtime, count } of store.countByState()) gauge.labels(status, runtime).set(count);
    },
  });
}
