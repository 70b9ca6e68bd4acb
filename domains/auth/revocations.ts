/**
 * Revoked login sessions: access tokens are self-contained JWTs, so logout
 * and refresh-token reuse (RFC 9700 §4.14.2) can only end them early through
 * a deny list, checked on every verify. Keyed by the session id (`sid`) every
 * access token of a session carries; an entry lives exactly as long as an
 * access token of that session could, so the list stays as small as the
 * logouts of one access-token lifetime. Persisted, loaded at start, read from
 * memory.
 */
import type { AuthStore } from './store.ts';

export class SessionRevocations {
  readonly #expiresAt = new Map<string, number>();

  constructor(
    private readonly store: AuthStore,
    private readonly nowSeconds: () => number,
  ) {
    for (const row of store.liveRevokedSessions(nowSeconds())) this.#expiresAt.set(row.sid, row.expiresAt);
  }

  revoke(sids: readonly string[], expiresAt: number): void {
    if (sids.length === 0) return;
    const now = this.nowSeconds();
    this.store.revokeSessions(sids, expiresAt, now);
    for (const [sid, exp] of this.#expiresAt) if (exp <= now) this.#expiresAt.delete(sid);
    for (const sid of sids) this.#expiresAt.set(sid, Math.max(expiresAt, this.#expiresAt.get(sid) ?? 0));
  }

  isRevoked(sid: string): boolean {
    const exp = this.#expiresAt.get(sid);
    return exp !== undefined && exp > this.nowSeconds();
  }
}
