/**
 * What a failed attempt may be sent again, and how many retries a deployment may have running.
 *
 * A request that never reached a replica (no connection: refused, unresolvable, connect timeout, TLS) is sent to
 * another, whatever its method: nothing of it was sent. One that may have reached it is sent again only when its
 * method is idempotent (RFC 9110 §9.2.2) and its body is at hand: none, or one small enough to have been kept
 * (`KEPT_BODY_BYTES`); that covers a keep-alive connection the replica closed as the request went out (reset, or
 * dropped before an answer) and a 502/503 answer, which the client then never sees. A POST whose body left is
 * never sent twice. Never after a byte of the answer reached the client, and never on a timeout (the replica may
 * still be working on it).
 *
 * Retries are also bounded by a budget, as Linkerd's retry budgets
 * (https://linkerd.io/2-edge/reference/retries/): over the last ten seconds, a deployment's retries may be at most
 * 20 % of its requests, plus ten a second, so a failing deployment cannot be buried under the retries it provokes,
 * while the few requests that were in flight on a replica that just died are all sent elsewhere.
 */
import type { TransportPhase } from '../../gateway/mesh/transport-errors.ts';

/** RFC 9110 §9.2.2; CONNECT and PATCH are not. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

/** An idempotent request's body up to this size is kept, so it can be sent again. */
export const KEPT_BODY_BYTES = 64 * 1024;

/** Further attempts of a deployment that sets none. */
export const DEFAULT_RETRIES = 2;

const BUDGET_RATIO = 0.2;
const MIN_RETRIES_PER_SECOND = 10;
const WINDOW_MS = 10_000;

/**
 * Requests and retries of one deployment in this process over a sliding window: the current window's counts plus
 * the previous window's, weighted by how much of it still lies within the last `WINDOW_MS`.
 */
export class RetryBudget {
  #start = performance.now();
  #requests = 0;
  #retries = 0;
  #previousRequests = 0;
  #previousRetries = 0;

  /** One more request (not a retry). */
  request(): void {
    this.#roll();
    this.#requests++;
  }

  /** Whether a retry may be sent now; if so, it is counted. */
  take(): boolean {
    const carried = this.#roll();
    const requests = this.#requests + this.#previousRequests * carried;
    const retries = this.#retries + this.#previousRetries * carried;
    if (retries >= BUDGET_RATIO * requests + (MIN_RETRIES_PER_SECOND * WINDOW_MS) / 1000) return false;
    this.#retries++;
    return true;
  }

  /** Starts a new window when the current one is over; answers the share of the previous one still counted. */
  #roll(): number {
    const elapsed = performance.now() - this.#start;
    if (elapsed >= WINDOW_MS) {
      const windows = Math.floor(elapsed / WINDOW_MS);
      [this.#previousRequests, this.#previousRetries] = windows === 1 ? [this.#requests, this.#retries] : [0, 0];
      this.#requests = 0;
      this.#retries = 0;
      this.#start += windows * WINDOW_MS;
      return 1 - (elapsed - windows * WINDOW_MS) / WINDOW_MS;
    }
    return 1 - elapsed / WINDOW_MS;
  }
}

export function idempotent(method: string): boolean {
  return IDEMPOTENT.has(method);
}

/**
 * Whether a failed attempt may be sent again. `failure` is the transport phase of the error, or `status` for a
 * 502/503 answer; `replayable`: the request has no body or kept it; `bodyUntouched`: none of the client's body was
 * read yet.
 */
export function mayRetry(
  failure: TransportPhase | 'status',
  method: string,
  replayable: boolean,
  bodyUntouched: boolean,
): boolean {
  if (failure === 'connect') return replayable || bodyUntouched;
  if (failure === 'reset' || failure === 'dropped' || failure === 'status') return replayable && idempotent(method);
  return false;
}
