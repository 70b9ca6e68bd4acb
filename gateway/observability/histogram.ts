/**
 * A Prometheus histogram whose series are bound once and then observed with a bucket search and three additions.
 * prom-client's own `labels(...).observe()` rebuilds, validates and hashes the label set on every call, which on the
 * proxy's path (one observation per request) cost more than the rest of the request's metrics together
 * (bench/README.md, proxy). This one registers with a prom-client Registry like any metric and exports the same
 * samples prom-client's Histogram would — `_bucket` (cumulative, `le` first, then `+Inf`), `_sum`, `_count`
 * (https://prometheus.io/docs/concepts/metric_types/#histogram) — so scrapes and the workers' aggregation (`sum`)
 * read it unchanged.
 */
import type { Registry } from 'prom-client';

export interface HistogramSeries {
  observe(value: number): void;
}

interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

class Series implements HistogramSeries {
  /** Per bucket, not cumulative; the last one counts what is above every bound. */
  readonly counts: number[];
  sum = 0;
  count = 0;
  /** Removed from its histogram (`remove`): what its holder observes next is not counted anywhere. */
  dead = false;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  clear(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }

  observe(value: number): void {
    if (this.dead) return;
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let at = 0;
    while (at < bounds.length && value > (bounds[at] as number)) at++;
    (this.counts as number[])[at] = (this.counts[at] as number) + 1;
    this.sum += value;
    this.count += 1;
  }
}

export class BoundHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series = new Map<string, Series>();
  readonly #bounds: readonly number[];
  readonly #removed: ((label: L, value: string) => void)[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    buckets: readonly number[],
    registers: readonly Registry[],
  ) {
    if ((labelNames as readonly string[]).includes('le')) throw new Error(`${name}: 'le' is reserved for buckets`);
    this.#bounds = [...new Set(buckets)].sort((a, b) => a - b);
    // prom-client's Registry takes any object with name, get() and reset(); its own metrics are registered this way.
    for (const registry of registers)
      registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of these label values, in `labelNames` order; made on first use and kept. */
  labels(...values: string[]): HistogramSeries {
    if (values.length !== this.labelNames.length)
      throw new Error(`${this.name}: expected ${this.labelNames.length} label values, got ${values.length}`);
    const key = values.join('\u0000');
    let series = this.#series.get(key);
    if (!series) {
      series = new Series(
        Object.fromEntries(this.labelNames.map((name, i) => [name, values[i] as string])),
        this.#bounds,
      );
      this.#series.set(key, series);
    }
    return series;
  }

  /**
   * Drops every series whose `label` is `value` (a deleted deployment's): they leave the scrape, so label values
   * that stop existing do not keep series for the life of the process. A series dropped is dead: whoever bound it
   * observes into nothing, and `labels()` binds a fresh one. Those who keep bound series are told (`onRemove`).
   */
  remove(label: L, value: string): void {
    for (const [key, series] of this.#series)
      if (series.labels[label] === value) {
        series.dead = true;
        this.#series.delete(key);
      }
    for (const listener of this.#removed) listener(label, value);
  }

  /** Called after each `remove`, with its label and value. */
  onRemove(listener: (label: L, value: string) => void): void {
    this.#removed.push(listener);
  }

  /** The values `label` takes in the series bound now. */
  valuesOf(label: L): Set<string> {
    const values = new Set<string>();
    for (const series of this.#series.values()) values.add(series.labels[label] as string);
    return values;
  }

  async get(): Promise<{ name: string; help: string; type: 'histogram'; values: Sample[]; aggregator: 'sum' }> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const series of this.#series.values()) {
      // As prom-client: a series bound but never observed (or observed only before a reset) is not exported.
      if (series.count === 0) continue;
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += series.counts[i] as number;
        values.push({ labels: { le, ...series.labels }, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: '+Inf', ...series.labels }, value: series.count, metricName: bucket });
      values.push({ labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** Zeroes every series in place: callers keep the series they bound, and what they observe next counts. */
  reset(): void {
    for (const series of this.#series.values()) series.clear();
  }
}
