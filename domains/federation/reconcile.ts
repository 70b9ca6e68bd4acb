/**
 * Both sides of a pairing agree on its state. Every PAIRED record is pinged once per interval, each at its own
 * random offset within the interval (so 1,000 records are 1,000 pings spread over it, never a burst); a peer that
 * answers — signed with the pairing's PSK, from the cluster pinned at pairing — that its record is no longer PAIRED
 * ends the pairing here too (DISCONNECTED, status_reason `peer_not_paired`). That is how a disconnect forced on one
 * side while the other was down ends on both at the next contact.
 *
 * An unsigned refusal changes nothing: anyone on the path can answer 403, only the peer holds the PSK, and the
 * response signature covers our request's signature (fresh nonce), so an old answer cannot be replayed either.
 */
import type { Counter } from 'prom-client';
import { SIGNATURE_MAX_AGE_SECONDS, unixSeconds } from '../../gateway/mesh/canonical.ts';
import type { FederationContext } from './context.ts';
import { FederationErrors } from './errors.ts';
import { expectAccepted, expectPeerIdentity } from './pairing.ts';
import { callPeer, type PeerAnswer, peerReason } from './peer-client.ts';
import type { CachedRecord } from './record-cache.ts';
import type { FederationRow } from './store.ts';

/** The peer proved, with the PSK, that it no longer holds this pairing. */
function peerEndedPairing(row: FederationRow, answer: PeerAnswer, nowSeconds: number): boolean {
  return (
    answer.status === 403 &&
    answer.signed &&
    peerReason(answer) === 'federation_not_active' &&
    answer.responderId?.toLowerCase() === row.remoteClusterId &&
    Math.abs(answer.ts - nowSeconds) < SIGNATURE_MAX_AGE_SECONDS
  );
}

/** A signed ping of a PAIRED record; answers the time it came back, or throws the layer's reason. */
export async function pingPeer(ctx: FederationContext, row: FederationRow): Promise<string> {
  const agent = row.status === 'PAIRED' ? ctx.agents.for(row) : null;
  const key = ctx.cache.key(row.id);
  if (!agent || !key) throw FederationErrors.make.federation_not_paired({ status: row.status });
  const answer = await callPeer(
    agent,
    '/api/cluster/remote/ping',
    { federation_id: row.id },
    key,
    ctx.local.id,
    ctx.now(),
  );
  if (peerEndedPairing(row, answer, unixSeconds(ctx.now()))) {
    const at = ctx.now().toISOString();
    ctx.records.update(row.id, { status: 'DISCONNECTED', statusReason: 'peer_not_paired', updatedAt: at });
    ctx.logger.warn(
      { federation_id: row.id, remote_cluster_id: row.remoteClusterId, remote_cluster_name: row.remoteClusterName },
      'federation disconnected: the peer no longer holds the pairing (it was disconnected or ended on its side)',
    );
    throw FederationErrors.make.peer_pairing_ended({ federation_id: row.id, status: 'DISCONNECTED' });
  }
  expectAccepted(ctx, answer, SIGNATURE_MAX_AGE_SECONDS);
  expectPeerIdentity(ctx, row, answer);
  const at = ctx.now().toISOString();
  ctx.records.update(row.id, { lastPing: at, lastActivity: at });
  return at;
}

export interface ReconcilerOptions {
  readonly intervalMs: number;
  /** Outcomes by reason (`ok`, `peer_pairing_ended`, a transport layer's reason). */
  readonly outcomes: Counter;
  /** [0, 1): where in the interval a record's first ping falls. */
  readonly random?: () => number;
}

/** One timer per PAIRED record; records come and go with the cache (track). */
export class Reconciler {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  /** Records whose last ping failed, so an outage is logged once when it starts and once when it ends. */
  readonly #failing = new Set<string>();
  #closed = false;

  constructor(
    private readonly ctx: FederationContext,
    private readonly options: ReconcilerOptions,
  ) {}

  /** Follows the record cache: a PAIRED record gets a timer, any other loses its own. */
  track(before: CachedRecord | undefined, after: CachedRecord | undefined): void {
    const id = (after ?? before)?.row.id as string;
    if (after?.row.status === 'PAIRED') {
      if (!this.#timers.has(id)) this.#schedule(id, (this.options.random ?? Math.random)() * this.options.intervalMs);
      return;
    }
    clearTimeout(this.#timers.get(id));
    this.#timers.delete(id);
    this.#failing.delete(id);
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  #schedule(id: string, delayMs: number): void {
    const timer = setTimeout(() => void this.#ping(id), delayMs);
    timer.unref();
    this.#timers.set(id, timer);
  }

  async #ping(id: string): Promise<void> {
    const record = this.ctx.cache.get(id);
    if (record?.row.status !== 'PAIRED') return;
    let outcome = 'ok';
    try {
      await pingPeer(this.ctx, record.row);
      if (this.#failing.delete(id)) this.ctx.logger.info({ federation_id: id }, 'federation peer answers again');
    } catch (error) {
      outcome = (error as { reason?: string }).reason ?? 'failed';
      if (outcome !== 'peer_pairing_ended' && !this.#failing.has(id)) {
        this.#failing.add(id);
        this.ctx.logger.warn(
          { federation_id: id, remote_cluster_name: record.row.remoteClusterName, reason: outcome },
          'federation peer does not answer its reconciliation ping (logged again when it does)',
        );
      }
    }
    this.options.outcomes.labels(outcome).inc();
    // One ping per record per interval: the next is scheduled only once this one is over.
    if (!this.#closed && this.#timers.get(id) && this.ctx.cache.get(id)?.row.status === 'PAIRED')
      this.#schedule(id, this.options.intervalMs);
  }
}
