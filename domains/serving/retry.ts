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
 * Retries are also bounded by a budget, as Envoy's retry budgets
 * (https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/cluster/v3/circuit_breaker.proto): at most 20 % of the
 * deployment's requests in flight may be retries (at least 3 at a time), so an outage cannot be multiplied by the
 * retries it provokes.
 */
import type { TransportPhase } from '../../gateway/mesh/transport-errors.ts';

/** RFC 9110 §9.2.2; CONNECT and PATCH are not. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

/** An idempotent request's body up to this size is kept, so it can be sent again. */
export const KEPT_BODY_BYTES = 64 * 1024;

/** Further attempts of a deployment that sets none. */
export const DEFAULT_RETRIES = 2;

const BUDGET_SHARE = 0.2;
const MIN_RETRY_CONCURRENCY = 3;

/** Retries of one deployment running in this process. */
export class RetryBudget {
  #running = 0;

  /** A retry may start now, with `active` requests of the deployment in flight. */
  take(active: number): boolean {
    if (this.#running >= Math.max(MIN_RETRY_CONCURRENCY, active * BUDGET_SHARE)) return false;
    this.#running++;
    return true;
  }

  give(): void {
    this.#running--;
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
