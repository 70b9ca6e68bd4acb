/**
 * The gateway's Prometheus registry (prom-client), one per gateway so that
 * several gateways in one process (tests) keep their own figures. Modules
 * get it through their deps as a MetricsRegistry and declare their metrics
 * with it; the kernel never learns a domain's metric by name. Every name is
 * prefixed `meshgate_`. Label values must come from bounded sets (a route
 * template, a configured deployment or peer, a registered reason), never
 * from ids, paths or user input: each distinct value is a new time series
 * kept for the life of the process.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { BUILD_INFO } from '../build-info.ts';
import { BoundHistogram } from './histogram.ts';

export interface MetricSpec<L extends string> {
  /** Without the `meshgate_` prefix. */
  readonly name: string;
  readonly help: string;
  readonly labels: readonly L[];
}

export interface HistogramSpec<L extends string> extends MetricSpec<L> {
  readonly buckets: readonly number[];
}

export interface GaugeSpec<L extends string> extends MetricSpec<L> {
  /** Called at each scrape to set the gauge from the live state (a store count, a pool's stats). */
  readonly collect?: (gauge: Gauge<L>) => void | Promise<void>;
  /**
   * How a scrape under workers combines the processes' values: `sum` (the default) for what each process holds
   * (connections, requests in flight), `first` for state read from the shared database, the same in every process.
   */
  readonly across?: 'sum' | 'first';
}

export interface CounterSpec<L extends string> extends MetricSpec<L> {
  /** Called at each scrape to set the counter from totals a module keeps itself (cheaper on a hot path). */
  readonly collect?: (counter: Counter<L>) => void;
}

export interface MetricsRegistry {
  counter<L extends string>(spec: CounterSpec<L>): Counter<L>;
  histogram<L extends string>(spec: HistogramSpec<L>): BoundHistogram<L>;
  gauge<L extends string>(spec: GaugeSpec<L>): Gauge<L>;
}

/** Seconds buckets from 1 ms to 1 min: API answers, proxied requests and streamed retrievals alike. */
export const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
] as const;

export const METRIC_PREFIX = 'meshgate_';

export interface GatewayMetrics extends MetricsRegistry {
  /** What the admin listener renders. */
  readonly registry: Registry;
}

/**
 * A registry whose declarations are idempotent by name: two modules (the
 * mesh verify stage and the egress signer) share one counter by declaring
 * the same spec, where prom-client alone would refuse the second.
 * `databaseGauges: false` (a worker) leaves the gauges read from the shared
 * database (`across: 'first'`) out of this registry: the primary's scrape
 * reads them once for every process.
 */
export function createMetrics({ databaseGauges = true }: { databaseGauges?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  const declared = new Map<string, unknown>();
  function declare<T>(spec: MetricSpec<string>, build: (name: string) => T): T {
    const name = `${METRIC_PREFIX}${spec.name}`;
    let metric = declared.get(name) as T | undefined;
    if (metric === undefined) {
      metric = build(name);
      declared.set(name, metric);
    }
    return metric;
  }
  const base = (name: string, spec: MetricSpec<string>) => ({
    name,
    help: spec.help,
    labelNames: spec.labels,
    registers: [registry],
  });
  // prom-client calls `collect` with the metric as `this`; the specs take it as an argument instead.
  const scrape = <M>(collect: ((metric: M) => void | Promise<void>) | undefined) =>
    collect
      ? {
          collect: function (this: M) {
            return collect(this);
          },
        }
      : {};
  // `meshgate_build_info{version,commit} 1` (the Prometheus info-metric convention): which build answers, in every
  // process; combined under workers by `max`, so the scrape reads 1 however many processes report it.
  new Gauge({
    name: `${METRIC_PREFIX}build_info`,
    help: 'The version and commit of the running build (always 1).',
    labelNames: ['version', 'commit'],
    registers: [registry],
    aggregator: 'max',
  })
    .labels(BUILD_INFO.version, BUILD_INFO.commit)
    .set(1);
  return {
    registry,
    counter: <L extends string>(spec: CounterSpec<L>) =>
      declare<Counter<L>>(
        spec,
        (name) =>
          new Counter<string>({ ...base(name, spec), ...scrape(spec.collect as CounterSpec<string>['collect']) }),
      ) as Counter<L>,
    histogram: <L extends string>(spec: HistogramSpec<L>) =>
      declare<BoundHistogram<L>>(
        spec,
        (name) => new BoundHistogram(name, spec.help, spec.labels, spec.buckets, [registry]),
      ),
    gauge: <L extends string>(spec: GaugeSpec<L>) =>
      declare<Gauge<L>>(
        spec,
        (name) =>
          new Gauge<string>({
            ...base(name, spec),
            ...(spec.across === 'first' && !databaseGauges && { registers: [] }),
            aggregator: spec.across ?? 'sum',
            ...scrape(spec.collect as GaugeSpec<string>['collect']),
          }),
      ) as Gauge<L>,
  };
}

/** "2xx" … "5xx": the status class keeps the request series bounded whatever the answers. */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
}
