/**
 * Hardened mesh: accepted nonces per peer in the shared database, each kept
 * until its signature leaves the acceptance window, so a replay is refused
 * whichever gateway process receives it. Acceptance is one insert-or-fail
 * (the primary key (peer, nonce) decides), never a read then a write another
 * process could interleave with. Beyond the per-peer bound the oldest
 * entries go first; the window itself still refuses anything older.
 */
import { NODE_CLOCK_SKEW_SECONDS } from '../cluster/nodes.ts';
import type { SqlConnection } from '../db/connection.ts';

/** Accepts between prunes: expired rows are dropped in bulk, not on every request. */
const PRUNE_EVERY = 256;

export class ReplayCache {
  readonly #accept;
  readonly #prune;
  readonly #peerCount;
  readonly #trimPeer;
  #sincePrune = 0;

  constructor(
    sqlite: SqlConnection,
    private readonly maxPerPeer: number,
  ) {
    // The upsert writes only when the earlier use of the nonce has expired: `changes` is 1 exactly when accepted.
    this.#accept = sqlite.prepare(
      'INSERT INTO mesh_replay (peer_id, nonce, expires_at) VALUES (?, ?, ?) ' +
        'ON CONFLICT (peer_id, nonce) DO UPDATE SET expires_at = excluded.expires_at WHERE mesh_replay.expires_at < ?',
    );
    this.#prune = sqlite.prepare('DELETE FROM mesh_replay WHERE expires_at < ?');
    this.#peerCount = sqlite.prepare('SELECT count(*) FROM mesh_replay WHERE peer_id = ?').pluck();
    this.#trimPeer = sqlite.prepare(
      'DELETE FROM mesh_replay WHERE peer_id = ? AND nonce IN (SELECT nonce ' +
        'FROM mesh_replay WHERE peer_id = ? ORDER BY expires_at LIMIT ?)',
    );
  }

  /**
   * False when the nonce was already accepted from this peer, by any process, and has not expired. Expired by every
   * node's clock, that is: a row goes NODE_CLOCK_SKEW_SECONDS after its expiry by this one's, so a node whose clock
   * is behind (and would still take the signature as fresh) still finds the nonce spent.
   */
  accept(peerId: string, nonce: string, expiresAt: number, nowSeconds: number): boolean {
    const expiredBefore = nowSeconds - NODE_CLOCK_SKEW_SECONDS;
    const accepted = this.#accept.run(peerId, nonce, expiresAt, expiredBefore).changes === 1;
    if (accepted && ++this.#sincePrune >= Math.min(PRUNE_EVERY, this.maxPerPeer)) {
      this.#sincePrune = 0;
      this.#prune.run(expiredBefore);
      const excess = (this.#peerCount.get(peerId) as number) - this.maxPerPeer;
      if (excess > 0) this.#trimPeer.run(peerId, peerId, excess);
    }
    return accepted;
  }
}
