/**
 * What an order on a cluster leaves (cluster.ts: the account key, the certificate and its key, the status), taken to
 * the database: published the moment it is written, so no pull in between can write the database's older files over
 * it (the renewal loop calls publish() with no await since the write); fenced by the order lock, so a session that
 * lost it (the bridge replaced a broken connection) publishes nothing over another node's order; and, when that
 * fails (the database away, the lock lost), kept pending and published again on a timer, under the lock, before the
 * node takes anything another node published — unless the database's status changed since the order began, which
 * means another node ordered meanwhile: its outcome is then taken instead.
 */
import type { Logger } from 'pino';
import { type AcmeCluster, OrderLockLost } from './cluster.ts';

/** An unpublished outcome is published again after retryMinMs, at most this long. */
const MAX_PUBLISH_RETRY_MS = 60_000;
/** How often an ordering node looks whether its session still holds the order lock. */
export const LOCK_CHECK_MS = 5_000;
const STATUS_FILE = 'status.json';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class ClusterOutcome {
  /** What the last order left is not in the database yet. */
  #pending = false;
  #timer: NodeJS.Timeout | null = null;
  /** The database's status.json when the order began: another one later means another node published. */
  #base: string | null = null;
  #lockLostLogged = false;
  #closed = false;

  constructor(
    private readonly cluster: AcmeCluster,
    private readonly logger: Logger,
    private readonly retryMs: number,
    /** A pending outcome was published, or another node's taken instead: the loop looks at the files again. */
    private readonly settled: () => void,
  ) {}

  get pending(): boolean {
    return this.#pending;
  }

  /** The lock is taken and the database's files pulled: what the order starts from. */
  begin(): void {
    this.#base = this.cluster.peek(STATUS_FILE);
    this.#lockLostLogged = false;
  }

  /** Publishes the order's files now; pending when that fails (said once per order). */
  publish(): void {
    try {
      this.cluster.publish();
      this.#pending = false;
    } catch (error) {
      if (error instanceof OrderLockLost) this.lockLost();
      else if (!this.#pending) {
        this.logger.error({ err: messageOf(error) }, 'ACME state could not be published to the other nodes; retrying');
      }
      this.#pending = true;
    }
  }

  /** The lock was released: a pending outcome is published again later. */
  released(): void {
    if (this.#pending) this.#later();
  }

  /**
   * Publishes the pending outcome under the lock when the database still holds the status the order began from,
   * else writes the database's files (another node's outcome) over this node's. True once nothing is pending.
   */
  again(): boolean {
    const { cluster, logger } = this;
    if (!this.#pending) return true;
    if (this.#closed) return false;
    let locked = false;
    try {
      locked = cluster.tryLock();
    } catch {
      // The database is still away: the timer tries again.
    }
    if (!locked) {
      this.#later();
      return false;
    }
    try {
      if (cluster.peek(STATUS_FILE) === this.#base) {
        cluster.publish();
        logger.info('ACME state published to the other nodes');
      } else {
        logger.warn('ACME: another node published its ACME state meanwhile; it is taken instead of this node’s');
        cluster.pull();
      }
      this.#pending = false;
    } catch (error) {
      logger.warn({ err: messageOf(error) }, 'ACME state could not be published yet; retrying');
      this.#later();
    } finally {
      try {
        cluster.unlock();
      } catch {
        // The lock is the session's: it goes with the connection the bridge replaces.
      }
    }
    return !this.#pending;
  }

  /** The order lock is no longer this session's: said once per order. */
  lockLost(): void {
    if (this.#lockLostLogged) return;
    this.#lockLostLogged = true;
    this.logger.warn(
      'ACME: the cluster order lock was lost (the database connection was replaced); the order is abandoned and ' +
        'nothing more of it is published until the lock is taken again',
    );
  }

  /** Aborts `lost` once this session no longer holds the lock (or cannot tell); the caller clears the interval. */
  watch(lost: AbortController, everyMs = LOCK_CHECK_MS): NodeJS.Timeout {
    const watch = setInterval(() => {
      let held = false;
      try {
        held = this.cluster.holdsLock();
      } catch {
        // A database that does not answer: its session, and the lock with it, may be gone.
      }
      if (!held) lost.abort(new OrderLockLost());
    }, everyMs);
    watch.unref();
    return watch;
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
  }

  #later(): void {
    if (this.#timer !== null || this.#closed) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        if (this.again()) this.settled();
      },
      Math.min(this.retryMs, MAX_PUBLISH_RETRY_MS),
    );
    this.#timer.unref();
  }
}
