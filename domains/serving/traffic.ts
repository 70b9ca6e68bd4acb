/**
 * Requests proxied per deployment. The proxy adds one to its target's cell
 * per request (a plain increment: the hot path pays nothing more); the same
 * cells are the `meshgate_upstream_requests_total` series of this process
 * (proxy-metrics.ts) and, every second, each process adds what it counted
 * since its last flush to the deployment's row in `deployment_traffic`. The
 * API's figure is that row plus this process's share not flushed yet: with
 * `--workers N` it covers every process, the others' last second excepted. The same flush writes the minute series
 * of the console's charts (series.ts).
 */
import type { Logger } from 'pino';
import type { MinuteSeries } from './series.ts';
import type { DeploymentStore } from './store.ts';

/** How often counts reach the table: the most another process's figure lags behind. */
export const TRAFFIC_FLUSH_MS = 1000;

export interface RequestCell {
  /** Requests this process proxied since it started. */
  total: number;
  /** The part of `total` already added to the table. */
  flushed: number;
}

/** One cell per proxy label (a deployment id, or the service name of the frontend and operator services). */
export class RequestCounts {
  readonly #cells = new Map<string, RequestCell>();

  cell(label: string): RequestCell {
    let cell = this.#cells.get(label);
    if (!cell) {
      cell = { total: 0, flushed: 0 };
      this.#cells.set(label, cell);
    }
    return cell;
  }

  entries(): IterableIterator<[string, RequestCell]> {
    return this.#cells.entries();
  }

  /** A deleted deployment's cell: its requests not flushed yet would be skipped by the store anyway. */
  forget(label: string): void {
    this.#cells.delete(label);
  }

  /** This process's requests to `label` that the table does not hold yet. */
  unflushed(label: string): number {
    const cell = this.#cells.get(label);
    return cell ? cell.total - cell.flushed : 0;
  }

  /** Writes every cell's unflushed requests; a failed write keeps them for the next flush. */
  flushTo(store: DeploymentStore, at: string): void {
    const deltas = [...this.#cells]
      .map(([label, cell]) => [label, cell.total - cell.flushed, cell] as const)
      .filter(([, delta]) => delta > 0);
    if (deltas.length === 0) return;
    // Labels that are no deployment (the frontend's) are skipped by the store like a removed deployment.
    store.addTraffic(
      deltas.map(([label, delta]) => [label, delta] as const),
      at,
    );
    for (const [, delta, cell] of deltas) cell.flushed += delta;
  }
}

/** Flushes the counts on an interval while the process serves, and once more as it closes. */
export class TrafficFlusher {
  #timer: NodeJS.Timeout | null = null;
  #failing = false;

  constructor(
    private readonly counts: RequestCounts,
    private readonly series: MinuteSeries,
    private readonly store: DeploymentStore,
    private readonly now: () => Date,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.#timer = setInterval(() => this.flush(), TRAFFIC_FLUSH_MS);
    this.#timer.unref();
  }

  /** A database that cannot take the write now (busy, closing) is logged once; the counts wait for the next try. */
  flush(): void {
    try {
      this.counts.flushTo(this.store, this.now().toISOString());
      this.series.flushTo(this.store);
      this.#failing = false;
    } catch (error) {
      if (!this.#failing) this.logger.warn({ err: error }, 'deployment traffic: counts not written; retrying');
      this.#failing = true;
    }
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.flush();
  }
}
