/**
 * `/metrics` under `serve --workers N`. The primary holds the admin listener; at each scrape it asks every worker
 * for its registry over the owner link and combines them with its own as prom-client's cluster aggregation does
 * (https://github.com/siimon/prom-client#usage-with-nodejss-cluster-module): counters and histograms summed, each
 * gauge as it declares (`across` in gateway/observability/metrics.ts), prom-client's process metrics as it declares
 * them (resident memory and CPU summed, event-loop lag averaged).
 *
 * A summed counter must not fall while its series lives, or Prometheus reads a reset and `rate()` counts the whole
 * total again: so the counters and histograms of a worker that exited (crashed, or replaced at a reload) stay in the
 * sum as its last answer read them. What it counted after that answer is lost, which only ever makes the sum lag,
 * never fall. A label value that stopped existing (a deleted deployment) is the exception: its series leave the sum
 * whole (`forgetDeparted`), as they leave every worker, and Prometheus marks a series gone from the scrape stale
 * (ended, https://prometheus.io/docs/prometheus/latest/querying/basics/#staleness) rather than fallen to zero.
 */
import {
  AggregatorRegistry,
  collectDefaultMetrics,
  type MetricObjectWithValues,
  type MetricValue,
  type Registry,
} from 'prom-client';
import type { Config } from '../gateway/config/schema.ts';
import type { GatewayMetrics } from '../gateway/observability/metrics.ts';
import { type OwnerSide, type ProcessPlace, workerQuery } from '../gateway/process/link.ts';

type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** The primary's question to each worker at a scrape: its registry, as prom-client's JSON. */
const WORKER_METRICS = workerQuery<MetricsJson>('admin.metrics');

/** A worker of a gateway with an admin listener answers the primary's scrapes, its process metrics included. */
export function shareWorkerMetrics(config: Readonly<Config>, place: ProcessPlace, metrics: GatewayMetrics): void {
  if (place.role !== 'worker' || config.admin.port === null) return;
  collectDefaultMetrics({ register: metrics.registry });
  place.reply(WORKER_METRICS, () => metrics.registry.getMetricsAsJSON());
}

/** The counters and histograms of a registry's JSON: what only grows. */
const cumulative = (metrics: MetricsJson): MetricsJson =>
  // The JSON carries the type's name ('counter'), where prom-client's typings declare a numeric enum.
  metrics.filter((metric) => ['counter', 'histogram'].includes(metric.type as unknown as string));

/** How many forgotten label values are kept to filter a worker's last answer read before they were forgotten. */
const FORGOTTEN_KEPT = 1024;

/** `metrics` without the samples whose `label` is `value`. */
const without = (metrics: MetricsJson, label: string, value: string): MetricsJson =>
  metrics.map((metric) => ({ ...metric, values: metric.values.filter((v) => v.labels[label] !== value) }));

export class WorkersMetrics {
  /** Each live worker's last answer, by worker id. */
  readonly #last = new Map<number, MetricsJson>();
  /** The cumulative metrics of every worker that exited, summed into one. */
  #departed: Promise<MetricsJson> = Promise.resolve([]);
  /**
   * The latest label values forgotten (`label value`, oldest first): a scrape gathered before one was forgotten may
   * store its answers after, and a worker may answer before it has dropped the value itself. Its exit then leaves
   * its last answer without them. Bounded: a value forgotten FORGOTTEN_KEPT forgets ago is in no answer still held.
   */
  readonly #forgotten = new Map<string, { label: string; value: string }>();

  constructor(
    private readonly link: OwnerSide,
    private readonly own: Registry,
  ) {
    link.onWorkerExit((worker) => {
      const last = this.#last.get(worker);
      this.#last.delete(worker);
      if (last === undefined) return;
      let kept = cumulative(last);
      for (const { label, value } of this.#forgotten.values()) kept = without(kept, label, value);
      this.#departed = this.#departed.then((departed) =>
        AggregatorRegistry.aggregate([departed, kept]).getMetricsAsJSON(),
      );
    });
  }

  /** Drops every sample whose `label` is `value` from what exited workers left and from what live workers last said. */
  forgetDeparted(label: string, value: string): void {
    const key = `${label} ${value}`;
    this.#forgotten.delete(key);
    this.#forgotten.set(key, { label, value });
    if (this.#forgotten.size > FORGOTTEN_KEPT) this.#forgotten.delete(this.#forgotten.keys().next().value as string);
    for (const [worker, last] of this.#last) this.#last.set(worker, without(last, label, value));
    this.#departed = this.#departed.then((departed) => without(departed, label, value));
  }

  /** The Prometheus text of every process combined; a worker that does not answer in time is left out. */
  async render(): Promise<string> {
    const answers = await this.link.gather(WORKER_METRICS);
    for (const { worker, value } of answers) this.#last.set(worker, value);
    const parts = [await this.own.getMetricsAsJSON(), ...answers.map((answer) => answer.value), await this.#departed];
    return AggregatorRegistry.aggregate(parts).metrics();
  }
}
