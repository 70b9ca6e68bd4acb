/**
 * Ending login sessions. A session is a refresh-token family (RFC 9700
 * §4.14.2); ending one does two things:
 *
 * - the family is recorded as ended (revoked_families) and its refresh
 *   tokens revoked, so no token of it refreshes again, whatever a racing
 *   rotation wrote. The record is kept while it can matter: until the longest
 *   refresh-token lifetime (plus the nodes' clock skew) has passed since the
 *   revocation and no token of the family is unexpired; later logouts prune it;
 * - its access tokens, self-contained JWTs, are refused through a deny list
 *   keyed by the session id (`sid`) they carry, checked on every verify. An
 *   entry lives exactly as long as an access token of that session could,
 *   so the list stays as small as the logouts of one access-token lifetime.
 *   Persisted, loaded at start and again when another connection (the
 *   `meshgate user` CLI) commits, read from memory.
 */
import { NODE_CLOCK_SKEW_SECONDS } from '../../gateway/cluster/nodes.ts';
import type { AuthStore } from './store.ts';

export class SessionRevocations {
  readonly #expiresAt = new Map<string, number>();

  constructor(
    private readonly store: AuthStore,
    private readonly nowSeconds: () => number,
    private readonly accessTokenTtlSeconds: number,
    private readonly refreshTokenTtlSeconds: number,
  ) {
    this.reload();
  }

  /** Re-reads the persisted deny list: called when the database changed under this process. */
  reload(): void {
    this.#expiresAt.clear();
    for (const row of this.store.liveRevokedSessions(this.nowSeconds())) this.#expiresAt.set(row.sid, row.expiresAt);
  }

  /** Ends the families: their refresh tokens for good, their access tokens for as long as one could live. */
  end(familyIds: readonly string[]): void {
    if (familyIds.length === 0) return;
    const now = this.nowSeconds();
    // A rotation racing the revocation wrote its successor at most now: it expires within a refresh-token lifetime.
    const forgetBefore = now - this.refreshTokenTtlSeconds - NODE_CLOCK_SKEW_SECONDS;
    this.store.revokeFamilies(
      familyIds,
      new Date(now * 1000).toISOString(),
      new Date(forgetBefore * 1000).toISOString(),
    );
    // +1: a token signed within the current second may expire up to a second after `now + ttl`.
    const expiresAt = now + this.accessTokenTtlSeconds + 1;
    this.store.revokeSessions(familyIds, expiresAt, now);
    for (const [sid, exp] of this.#expiresAt) if (exp <= now) this.#expiresAt.delete(sid);
    for (const sid of familyIds) this.#expiresAt.set(sid, Math.max(expiresAt, this.#expiresAt.get(sid) ?? 0));
  }

  /** Ends every session of the user (logout, password reset); PATs are not sessions and stay. */
  endUser(userId: string): void {
    const since = new Date((this.nowSeconds() - this.accessTokenTtlSeconds - 1) * 1000).toISOString();
    this.end(this.store.openFamilies(userId, since));
    // Rows without a family (issued before sessions had one) are revoked too.
    this.store.revokeUserRefresh(userId);
  }

  isRevoked(sid: string): boolean {
    const exp = this.#expiresAt.get(sid);
    return exp !== undefined && exp > this.nowSeconds();
  }
}
