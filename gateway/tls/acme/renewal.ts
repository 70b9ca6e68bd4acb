/**
 * When to order: now, when no stored certificate is usable (another set of names, another directory, expired, its
 * key not the certificate's), unless a failed order for the same names and directory left a backoff; else at two thirds
 * of its lifetime, moved earlier by a random part of a thirtieth of it, so gateways started together do not ask the
 * CA together (Let's Encrypt's integration guide asks clients to spread their renewals); or at a random time
 * inside the window the CA suggests through ACME Renewal Information (RFC 9773 §4.2), when it offers one. A failed
 * order is retried after retryMinSeconds, doubled per failure up to six hours, with jitter; the certificate in use
 * keeps serving meanwhile. Every request to the CA has a timeout (order.ts) and an order as a whole a deadline, so a
 * CA that stops answering fails the order rather than holding the loop (and a stopping gateway) forever. On a
 * cluster, what an order leaves goes to the database as cluster-outcome.ts says.
 */
import { X509Certificate } from 'node:crypto';
import type { Logger } from 'pino';
import type { ServerKeyPair } from '../serving-certificate.ts';
import { type AcmeCluster, OrderLockLost } from './cluster.ts';
import { ClusterOutcome } from './cluster-outcome.ts';
import { backoffMs, dueAt, sameNames, usableStored } from './due.ts';
import type { AcmeSession } from './order.ts';
import type { AcmeStatus, AcmeStore } from './store.ts';

export { backoffMs, dueAt, servableStored, usableStored } from './due.ts';

/** How long one order may take, from opening the session to the certificate checked. */
export const ORDER_DEADLINE_MS = 10 * 60_000;

/** setTimeout's longest delay is 2^31-1 ms (~24.8 days); a later time is reached by waking once a day. */
const MAX_SLEEP_MS = 86_400_000;

export interface RenewalOptions {
  readonly names: readonly string[];
  /** The configured directory: a certificate or a backoff recorded for another one does not count. */
  readonly directoryUrl: string;
  readonly store: AcmeStore;
  readonly session: () => Promise<AcmeSession>;
  readonly retryMinMs: number;
  readonly orderDeadlineMs: number;
  readonly logger: Logger;
  readonly now: () => Date;
  /** A new certificate, checked and stored: serve it. */
  readonly onIssued: (pair: ServerKeyPair) => void | Promise<void>;
  readonly onFailure: () => void;
  /** PostgreSQL nodes (cluster.ts): one orders under the lock, the others adopt() what it published. */
  readonly cluster?: AcmeCluster;
  /** How often an order looks whether the order lock is still this session's (default 5 s). */
  readonly lockCheckMs?: number;
}

/** `work`, or the signal's reason once it aborts; `work` left behind settles unobserved. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) abort();
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class RenewalLoop {
  readonly #options: RenewalOptions;
  readonly #closing = new AbortController();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> = Promise.resolve();
  #status: AcmeStatus;
  #statusWriteFailing = false;
  /** The serial of the ACME certificate this process serves (null: none yet). */
  #served: string | null = null;
  #ordering = false; // this node holds the cluster's order lock
  readonly #outcome: ClusterOutcome | null;

  constructor(options: RenewalOptions) {
    this.#options = options;
    this.#status = options.store.status();
    const { cluster, logger, retryMinMs } = options;
    this.#outcome = cluster ? new ClusterOutcome(cluster, logger, retryMinMs, () => this.#run(this.adopt())) : null;
  }

  /**
   * Orders at once when nothing stored is usable, else schedules the renewal; a backoff left by a failure for the
   * same names and directory is waited out first, so restarts do not hammer a CA that refuses.
   */
  start(): void {
    if (this.#closing.signal.aborted) return;
    const now = this.#options.now();
    const backoff = this.#backoffUntil();
    const stored = usableStored(this.#options.store, this.#options.names, this.#options.directoryUrl, now);
    this.#served = stored?.serialNumber ?? null;
    // On a cluster, the renewal time the ordering node published holds for every node.
    const shared = stored && this.#options.cluster ? this.#scheduledFor(stored) : null;
    if (backoff !== null && backoff > now.getTime()) this.#wakeAt(backoff);
    else if (stored === null) this.#wakeAt(now.getTime());
    else if (shared !== null) this.#wakeAt(shared);
    else this.#run(this.#schedule(stored));
  }

  /**
   * Another node published ACME files (its certificate, or its failure): serve a certificate not served yet, and
   * wake when the shared status says. Ignored while this node orders (what it reads back is its own).
   */
  async adopt(): Promise<void> {
    if (this.#closing.signal.aborted || this.#ordering) return;
    // This node's own outcome first: taking the database's files now would write older ones over it.
    if (this.#outcome?.pending && !this.#outcome.again()) return;
    const { store, names, directoryUrl, now, cluster } = this.#options;
    cluster?.pull();
    this.#status = store.status();
    const stored = usableStored(store, names, directoryUrl, now());
    if (stored !== null) await this.#serveStored(stored);
    const backoff = this.#backoffUntil();
    const scheduled = stored === null ? null : this.#scheduledFor(stored);
    if (backoff !== null && backoff > now().getTime()) this.#wakeAt(backoff);
    else if (scheduled !== null) this.#wakeAt(scheduled);
  }

  /** The cluster's next renewal of `certificate`, when the shared status holds one for it. */
  #scheduledFor(certificate: X509Certificate): number | null {
    const { serial, nextRenewal } = this.#status;
    if (serial !== certificate.serialNumber || nextRenewal === null || this.#status.failures > 0) return null;
    const at = new Date(nextRenewal).getTime();
    return Number.isNaN(at) ? null : at;
  }

  /** Stops: a running order is abandoned (its next step fails), a pending one never begins. */
  async close(): Promise<void> {
    this.#closing.abort(new Error('the gateway is stopping'));
    if (this.#timer) clearTimeout(this.#timer);
    this.#outcome?.close();
    await this.#running;
  }

  #ordersThisTarget(status: AcmeStatus): boolean {
    return status.directoryUrl === this.#options.directoryUrl && sameNames(status.names, this.#options.names);
  }

  #backoffUntil(): number | null {
    const { failures, nextRenewal } = this.#status;
    if (failures === 0 || nextRenewal === null || !this.#ordersThisTarget(this.#status)) return null;
    const at = new Date(nextRenewal).getTime();
    return Number.isNaN(at) ? null : at;
  }

  #run(work: Promise<void>): void {
    this.#running = work.catch((error: unknown) =>
      this.#options.logger.error({ err: messageOf(error) }, 'ACME renewal loop failed; no renewal is scheduled'),
    );
  }

  #wakeAt(at: number): void {
    if (this.#closing.signal.aborted) return;
    if (this.#timer) clearTimeout(this.#timer);
    const delay = Math.max(0, at - this.#options.now().getTime());
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        if (at > this.#options.now().getTime()) this.#wakeAt(at);
        else this.#run(this.#renew());
      },
      Math.min(delay, MAX_SLEEP_MS),
    );
    this.#timer.unref();
  }

  /**
   * On a cluster: the order lock first. Held by another node, this one waits for what that node publishes (adopt),
   * looking again after retryMinMs in case that node died before publishing. Taken, the store is brought up to the
   * database's, and an order goes ahead only if no other node renewed meanwhile; what it leaves (certificate,
   * status, or the failure and its backoff) is published before the lock is released.
   */
  async #renew(): Promise<void> {
    const { cluster, logger, now } = this.#options;
    if (cluster === undefined) return this.#order();
    if (this.#outcome?.pending) {
      // Its timer publishes it (or takes another node's instead); what is due is looked at after that.
      this.#wakeAt(now().getTime() + this.#options.retryMinMs);
      return;
    }
    let locked = false;
    try {
      locked = cluster.tryLock();
    } catch (error) {
      logger.warn({ err: messageOf(error) }, 'ACME: the cluster order lock could not be asked for; trying again');
    }
    if (!locked) {
      logger.info('ACME order left to the node holding the cluster order lock');
      this.#wakeAt(now().getTime() + this.#options.retryMinMs);
      return;
    }
    this.#ordering = true;
    let settled: boolean;
    try {
      cluster.pull();
      this.#outcome?.begin();
      this.#status = this.#options.store.status();
      settled = await this.#settledElsewhere();
    } catch (error) {
      logger.warn({ err: messageOf(error) }, "ACME: the cluster's ACME state could not be read; trying again");
      this.#wakeAt(now().getTime() + this.#options.retryMinMs);
      settled = true;
    }
    if (settled) {
      this.#release(cluster);
      return;
    }
    try {
      await this.#order();
    } finally {
      this.#release(cluster);
    }
  }

  /** Lets the next node order; what the order left (published as it was written) is retried if that failed. */
  #release(cluster: AcmeCluster): void {
    const { logger } = this.#options;
    this.#ordering = false;
    this.#outcome?.released();
    try {
      cluster.unlock();
    } catch (error) {
      // The lock is the session's: it goes with the connection the bridge replaces.
      logger.warn({ err: messageOf(error) }, 'ACME: the cluster order lock could not be released');
    }
  }

  /**
   * True (and the next wake set) when the shared status holds a backoff or a renewal time not reached yet; a
   * certificate another node obtained meanwhile is served.
   */
  async #settledElsewhere(): Promise<boolean> {
    const { store, names, directoryUrl, now } = this.#options;
    const stored = usableStored(store, names, directoryUrl, now());
    const backoff = this.#backoffUntil();
    const scheduled = stored === null ? null : this.#scheduledFor(stored);
    const at = backoff !== null && backoff > now().getTime() ? backoff : scheduled;
    if (at === null || at <= now().getTime()) return false;
    if (stored !== null) await this.#serveStored(stored);
    this.#wakeAt(at);
    return true;
  }

  /** Serves the stored certificate when this process does not serve it yet. */
  async #serveStored(stored: X509Certificate): Promise<void> {
    const pair = this.#options.store.certificate();
    if (pair === null || stored.serialNumber === this.#served) return;
    this.#served = stored.serialNumber;
    await this.#options.onIssued({ certPem: pair.certPem, keyPem: pair.keyPem });
    const fields = { serial: stored.serialNumber, notAfter: stored.validToDate.toISOString() };
    this.#options.logger.info(fields, 'ACME certificate another node obtained is served');
  }

  async #order(): Promise<void> {
    const { store, names, directoryUrl, now, logger } = this.#options;
    // RFC 9773 §5: an order names the certificate it replaces; not after a failure, which may be the CA not knowing
    // it (a CA that was reset), and never one from another directory (usableStored).
    const replaces = this.#status.failures === 0 ? usableStored(store, names, directoryUrl, now()) : null;
    logger.info({ names, replaces: replaces?.serialNumber ?? null }, 'ACME order begun');
    const deadline = new AbortController();
    const seconds = this.#options.orderDeadlineMs / 1000;
    const timer = setTimeout(() => deadline.abort(new Error(`no certificate within ${seconds} s`)), seconds * 1000);
    const lost = new AbortController();
    const watch = this.#ordering ? this.#outcome?.watch(lost, this.#options.lockCheckMs) : undefined;
    const signal = AbortSignal.any([this.#closing.signal, deadline.signal, lost.signal]);
    try {
      const ordered = this.#options.session().then((session) => session.order(names, replaces, signal));
      const pair = await untilAborted(ordered, signal);
      this.#store(pair);
      // Published before anything awaits: a pull meanwhile would write the database's older files over these.
      this.#publish();
      const certificate = new X509Certificate(pair.certPem);
      this.#served = certificate.serialNumber;
      await this.#options.onIssued(pair);
      logger.info(
        { names, serial: certificate.serialNumber, notAfter: certificate.validToDate.toISOString() },
        'ACME certificate issued',
      );
      this.#status = { ...this.#status, failures: 0 };
      await this.#schedule(certificate);
    } catch (error) {
      if (this.#closing.signal.aborted) return;
      if (error instanceof OrderLockLost) {
        // Not the CA's failure (no backoff): looked at again later, under the lock, from what the database holds.
        this.#outcome?.lockLost();
        this.#wakeAt(now().getTime() + this.#options.retryMinMs);
        return;
      }
      this.#failed(error);
    } finally {
      clearTimeout(timer);
      clearInterval(watch);
    }
  }

  /** On a cluster, while this node orders: what the order left, to the database now. */
  #publish(): void {
    if (this.#ordering) this.#outcome?.publish();
  }

  #store(pair: ServerKeyPair): void {
    try {
      this.#options.store.saveCertificate(pair, this.#options.directoryUrl);
    } catch (error) {
      this.#options.logger.error(
        { dir: this.#options.store.dir, err: messageOf(error) },
        'ACME certificate could not be stored; it serves until the gateway restarts, which orders again',
      );
    }
  }

  #failed(error: unknown): void {
    const { names, now, logger } = this.#options;
    const failures = (this.#ordersThisTarget(this.#status) ? this.#status.failures : 0) + 1;
    const wait = backoffMs(failures, this.#options.retryMinMs);
    const next = new Date(now().getTime() + wait);
    // Logged each time: every failure is one the operator may have to act on (DNS, firewall, rate limit).
    logger.error(
      { names, failures, err: messageOf(error), retryAt: next.toISOString() },
      'ACME order failed; the certificate in use keeps serving',
    );
    this.#options.onFailure();
    this.#setStatus({
      failures,
      lastError: messageOf(error),
      lastErrorAt: now().toISOString(),
      nextRenewal: next.toISOString(),
    });
    this.#wakeAt(next.getTime());
  }

  /**
   * The next renewal of `certificate`: two thirds of its lifetime, or earlier when the CA's window (RFC 9773 §4.2)
   * starts earlier (a CA moves it ahead of a revocation). A window reaching later is not followed past two thirds:
   * renewing early costs nothing, and the last third is what keeps serving while a CA that is away comes back.
   */
  async #schedule(certificate: X509Certificate): Promise<void> {
    let at = dueAt(certificate);
    try {
      const session = await this.#options.session();
      const window = await untilAborted(session.renewalWindow(certificate), this.#closing.signal);
      if (window) {
        const inWindow = window.start.getTime() + Math.random() * (window.end.getTime() - window.start.getTime());
        at = new Date(Math.min(inWindow, at.getTime()));
      }
    } catch (error) {
      if (this.#closing.signal.aborted) return;
      // The CA's renewal information is advice (RFC 9773 §4.3.3): without it, the lifetime decides.
      this.#options.logger.warn({ err: messageOf(error) }, 'ACME renewal info unavailable');
    }
    this.#setStatus({
      issuer: certificate.issuer,
      serial: certificate.serialNumber,
      notAfter: certificate.validToDate.toISOString(),
      nextRenewal: at.toISOString(),
    });
    this.#wakeAt(at.getTime());
  }

  /** The status, in memory and on disk; a disk that refuses it (full, read-only) is logged once until it takes one. */
  #setStatus(change: Partial<AcmeStatus>): void {
    const target = { names: [...this.#options.names], directoryUrl: this.#options.directoryUrl };
    this.#status = { ...this.#status, ...change, ...target };
    try {
      this.#options.store.saveStatus(this.#status);
      this.#statusWriteFailing = false;
      this.#publish();
    } catch (error) {
      if (!this.#statusWriteFailing) {
        this.#options.logger.error(
          { dir: this.#options.store.dir, err: messageOf(error) },
          'ACME status could not be written; renewals go on, `meshgate cert status` shows the last one written',
        );
      }
      this.#statusWriteFailing = true;
    }
  }
}
