/**
 * Each deployment's traffic minute by minute, for the console's charts: requests, 4xx and 5xx answers, and how
 * long answers' heads took (time to first byte, which is what a streamed completion's caller waits for), counted in
 * fixed buckets. A process counts in memory per (deployment, minute) and adds what it counted to
 * `deployment_traffic_minutes` with the request counts (traffic.ts), so the table sums every process; percentiles
 * are read from the summed buckets (the bucket's upper bound, as Prometheus' `histogram_quantile` does without
 * interpolation). An hour is kept.
 */
import type { DeploymentStore, MinuteRow } from './store.ts';

/** Upper bounds (ms) of the buckets; the last bucket takes the rest. */
export const HEAD_BOUNDS_MS = [10, 50, 100, 250, 500, 1000, 2500, 10_000] as const;
const BUCKET_COLUMNS = ['le10', 'le50', 'le100', 'le250', 'le500', 'le1000', 'le2500', 'le10000', 'over'] as const;
export const SERIES_MINUTES = 60;

type Counts = Omit<MinuteRow, 'deploymentId' | 'minute'>;

function empty(): Counts {
  return {
    requests: 0,
    clientErrors: 0,
    serverErrors: 0,
    le10: 0,
    le50: 0,
    le100: 0,
    le250: 0,
    le500: 0,
    le1000: 0,
    le2500: 0,
    le10000: 0,
    over: 0,
  };
}

export class MinuteSeries {
  /** Counted and not written yet, by deployment then minute. */
  #pending = new Map<string, Map<number, Counts>>();

  constructor(private readonly nowMs: () => number) {}

  /** One answer: its status and how long its head took. */
  record(label: string, status: number, headMs: number): void {
    const minute = Math.floor(this.nowMs() / 60_000);
    let byMinute = this.#pending.get(label);
    if (!byMinute) {
      byMinute = new Map();
      this.#pending.set(label, byMinute);
    }
    let counts = byMinute.get(minute);
    if (!counts) {
      counts = empty();
      byMinute.set(minute, counts);
    }
    counts.requests++;
    if (status >= 500) counts.serverErrors++;
    else if (status >= 400) counts.clientErrors++;
    const bucket = HEAD_BOUNDS_MS.findIndex((bound) => headMs <= bound);
    counts[BUCKET_COLUMNS[bucket === -1 ? BUCKET_COLUMNS.length - 1 : bucket] as (typeof BUCKET_COLUMNS)[number]]++;
  }

  /** Adds what was counted to the table; a failed write keeps it for the next flush. */
  flushTo(store: Pick<DeploymentStore, 'addMinutes'>): void {
    if (this.#pending.size === 0) return;
    const rows: MinuteRow[] = [];
    for (const [deploymentId, byMinute] of this.#pending)
      for (const [minute, counts] of byMinute) rows.push({ deploymentId, minute, ...counts });
    store.addMinutes(rows);
    this.#pending = new Map();
  }
}

/** A bucket count's quantile: the upper bound of the bucket the `q`-th answer falls in; null without answers. */
function quantile(row: Counts, q: number): number | null {
  const total = BUCKET_COLUMNS.reduce((sum, column) => sum + row[column], 0);
  if (total === 0) return null;
  let seen = 0;
  for (const [i, column] of BUCKET_COLUMNS.entries()) {
    seen += row[column];
    // The last bucket has no upper bound: its answers read as the last bound, "10 s or more".
    if (seen >= q * total) return HEAD_BOUNDS_MS[Math.min(i, HEAD_BOUNDS_MS.length - 1)] as number;
  }
  return null;
}

/** The last hour, one entry per minute (minutes without traffic as zeros), oldest first. */
export function seriesView(rows: readonly MinuteRow[], nowMs: number) {
  const last = Math.floor(nowMs / 60_000);
  const byMinute = new Map(rows.map((r) => [r.minute, r]));
  return Array.from({ length: SERIES_MINUTES }, (_, i) => {
    const minute = last - SERIES_MINUTES + 1 + i;
    const row = byMinute.get(minute) ?? { ...empty(), deploymentId: '', minute };
    return {
      at: new Date(minute * 60_000).toISOString(),
      requests_per_second: Number((row.requests / 60).toFixed(3)),
      client_errors: row.clientErrors,
      server_errors: row.serverErrors,
      head_p50_ms: quantile(row, 0.5),
      head_p99_ms: quantile(row, 0.99),
    };
  });
}
