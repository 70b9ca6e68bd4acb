/**
 * Per-caller rate limits of deployments: a token bucket per (deployment, caller) of `burst` tokens refilled at
 * `requests_per_second`, in the database every process and node shares, so the limit holds across workers and
 * nodes. A request takes one token; without one it is refused with `429 rate_limited` and Retry-After (RFC 6585 §4).
 *
 * A process does not write per request: it takes a lease of a few tokens at once (at most a twentieth of the
 * second's rate and of the burst) in one atomic upsert that refills and takes in the same statement, then spends
 * them locally. Tokens are only ever taken from the shared bucket, so the callers of all processes together never
 * exceed the limit; a lease left unspent (it lapses after `LEASE_MS`) is the most they fall short of it by.
 */

import type { ApiError } from '../../gateway/errors/api-error.ts';
import { ServingErrors } from './errors.ts';
import type { RateLimitRecord } from './schema.ts';
import type { DeploymentStore } from './store.ts';

/** How long a leased token may be spent: a caller idle longer starts again from the shared bucket. */
const LEASE_MS = 250;
/** Leases kept at most; beyond, all are dropped (their tokens lapse as if unspent). */
const MAX_LEASES = 100_000;
/** Buckets idle this long are pruned: they have refilled. */
export const BUCKET_IDLE_MS = 3_600_000;

interface Lease {
  tokens: number;
  until: number;
  /** Set while the bucket is known empty: until its next token, at most `LEASE_MS`. */
  refusal?: ApiError;
}

export class RateLimiter {
  readonly #leases = new Map<string, Lease>();

  constructor(
    private readonly store: Pick<DeploymentStore, 'takeTokens'>,
    private readonly nowMs: () => number,
  ) {}

  /** Null when `caller` may send one more request to `deployment`, else the refusal. */
  take(deployment: string, caller: string, limit: RateLimitRecord): ApiError | null {
    const key = `${deployment} ${caller}`;
    const now = this.nowMs();
    const lease = this.#leases.get(key);
    if (lease && lease.until > now) {
      if (lease.tokens >= 1) {
        lease.tokens--;
        return null;
      }
      // Refused a moment ago, and no token can have come since: refused again without a write.
      if (lease.refusal) return lease.refusal;
    }
    const want = Math.max(1, Math.floor(Math.min(limit.burst, limit.requests_per_second) / 20));
    const { granted, tokens } = this.store.takeTokens(deployment, caller, want, limit, now);
    if (this.#leases.size >= MAX_LEASES) this.#leases.clear();
    if (granted >= 1) {
      if (granted > 1) this.#leases.set(key, { tokens: granted - 1, until: now + LEASE_MS });
      else this.#leases.delete(key);
      return null;
    }
    const nextTokenMs = ((1 - tokens) / limit.requests_per_second) * 1000;
    const refusal = ServingErrors.make.rate_limited({
      upstream: deployment,
      retry_after: Math.max(1, Math.ceil(nextTokenMs / 1000)),
    });
    // A caller hammering a limit costs one write per `LEASE_MS` at most, not one per request.
    this.#leases.set(key, { tokens: 0, until: now + Math.min(LEASE_MS, nextTokenMs), refusal });
    return refusal;
  }
}
