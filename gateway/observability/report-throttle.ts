/**
 * At most one log line per interval for a failure that repeats on its own schedule (a collector that is down fails
 * every batch): the first is reported at once, the ones after it within the interval are only counted, and the next
 * report says how many were held back. The operator sees the failure once, with context, and the log is not flooded.
 */
export class ReportThrottle {
  #lastReport = Number.NEGATIVE_INFINITY;
  #heldBack = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Undefined while the last report is younger than the interval; else the number held back since that report. */
  take(): number | undefined {
    const now = this.now();
    if (now - this.#lastReport < this.intervalMs) {
      this.#heldBack += 1;
      return undefined;
    }
    const heldBack = this.#heldBack;
    this.#lastReport = now;
    this.#heldBack = 0;
    return heldBack;
  }
}
