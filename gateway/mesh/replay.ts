/**
 * Hardened mesh: a bounded per-peer cache of accepted nonces, each kept
 * until its signature leaves the acceptance window. Beyond the bound the
 * oldest entries go first; the window itself still refuses anything older.
 */
export class ReplayCache {
  readonly #peers = new Map<string, Map<string, number>>();

  constructor(private readonly maxPerPeer: number) {}

  /** False when the nonce was already accepted from this peer and has not expired. */
  accept(peerId: string, nonce: string, expiresAt: number, nowSeconds: number): boolean {
    let seen = this.#peers.get(peerId);
    if (!seen) {
      seen = new Map();
      this.#peers.set(peerId, seen);
    }
    const prior = seen.get(nonce);
    if (prior !== undefined && prior >= nowSeconds) return false;
    // Insertion order is expiry order within a few seconds: trim expired entries from the front.
    for (const [old, expiry] of seen) {
      if (expiry >= nowSeconds && seen.size < this.maxPerPeer) break;
      seen.delete(old);
    }
    seen.set(nonce, expiresAt);
    return true;
  }
}
