/**
 * When to order: now, when no stored certificate covers the configured names or it is expired; else at two thirds
 * of its lifetime, moved earlier by a random part of a thirtieth of it, so gateways started together do not ask the
 * CA together (Let's Encrypt's integration guide asks clients to spread their renewals); or at a random time
 * inside the window the CA suggests through ACME Renewal Information (RFC 9773 §4.2), when it offers one. A failed
 * order is retried after retryMinSeconds, doubled per failure up to six hours, with jitter; the certificate in use
 * keeps serving meanwhile.
 */
import { X509Certificate } from 'node:crypto';
import type { Logger } from 'pino';
import type { ServerKeyPair } from '../serving-certificate.ts';
import type { AcmeSession } from './order.ts';
import { type AcmeStatus, type AcmeStore, certificateNames } from './store.ts';

const MAX_BACKOFF_MS = 6 * 3_600_000;
/** setTimeout's longest delay is 2^31-1 ms (~24.8 days); a later time is reached by waking once a day. */
const MAX_SLEEP_MS = 86_400_000;

export interface RenewalOptions {
  readonly names: readonly string[];
  readonly store: AcmeStore;
  readonly session: () => Promise<AcmeSession>;
  readonly retryMinMs: number;
  readonly logger: Logger;
  readonly now: () => Date;
  /** A new certificate, checked and stored: serve it. */
  readonly onIssued: (pair: ServerKeyPair) => void | Promise<void>;
  readonly onFailure: () => void;
}

/** The stored certificate, when it is for exactly `names` and still valid. */
export function usableStored(store: AcmeStore, names: readonly string[], now: Date): X509Certificate | null {
  const pair = store.certificate();
  if (pair === null) return null;
  try {
    const certificate = new X509Certificate(pair.certPem);
    const wanted = [...new Set(names)].sort().join(',');
    if (certificateNames(certificate).join(',') !== wanted || certificate.validToDate <= now) return null;
    return certificate;
  } catch {
    return null;
  }
}

/** Two thirds of the lifetime, less up to a thirtieth of it at random. */
export function dueAt(certificate: X509Certificate, random = Math.random()): Date {
  const from = certificate.validFromDate.getTime();
  const lifetime = certificate.validToDate.getTime() - from;
  return new Date(from + (lifetime * 2) / 3 - (lifetime / 30) * random);
}

/** The wait after the n-th failure in a row: doubling from the minimum, capped, and 0.8–1.2 of that at random. */
export function backoffMs(failures: number, minMs: number, random = Math.random()): number {
  const base = Math.min(MAX_BACKOFF_MS, minMs * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.8 + 0.4 * random));
}

export class RenewalLoop {
  readonly #options: RenewalOptions;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #running: Promise<void> = Promise.resolve();
  #status: AcmeStatus;

  constructor(options: RenewalOptions) {
    this.#options = options;
    this.#status = { ...options.store.status(), names: [...options.names] };
  }

  /** Orders at once when nothing stored serves, else schedules the renewal. */
  start(): void {
    const stored = usableStored(this.#options.store, this.#options.names, this.#options.now());
    if (stored === null) this.#wake(0);
    else this.#running = this.#schedule(stored);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  #wake(delayMs: number): void {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        const at = this.#status.nextRenewal ? new Date(this.#status.nextRenewal).getTime() : 0;
        this.#running = at > this.#options.now().getTime() ? this.#sleepUntil(at) : this.#renew();
      },
      Math.min(delayMs, MAX_SLEEP_MS),
    );
    this.#timer.unref();
  }

  async #sleepUntil(at: number): Promise<void> {
    this.#wake(at - this.#options.now().getTime());
  }

  async #renew(): Promise<void> {
    const { store, names, now, logger } = this.#options;
    // RFC 9773 §5: an order names the certificate it replaces; not after a failure, which may be the CA not knowing
    // it (a CA that was reset, another directory configured).
    const replaces = this.#status.failures === 0 ? usableStored(store, names, now()) : null;
    logger.info({ names, replaces: replaces?.serialNumber ?? null }, 'ACME order begun');
    try {
      const session = await this.#options.session();
      const pair = await session.order(names, replaces);
      store.saveCertificate(pair);
      await this.#options.onIssued(pair);
      const certificate = new X509Certificate(pair.certPem);
      logger.info(
        { names, serial: certificate.serialNumber, notAfter: certificate.validToDate.toISOString() },
        'ACME certificate issued',
      );
      this.#status = { ...this.#status, failures: 0 };
      await this.#schedule(certificate);
    } catch (error) {
      const failures = this.#status.failures + 1;
      const wait = backoffMs(failures, this.#options.retryMinMs);
      const message = error instanceof Error ? error.message : String(error);
      const next = new Date(now().getTime() + wait);
      // Logged each time: every failure is one the operator may have to act on (DNS, firewall, rate limit).
      logger.error(
        { names, failures, err: message, retryAt: next.toISOString() },
        'ACME order failed; the certificate in use keeps serving',
      );
      this.#options.onFailure();
      this.#setStatus({
        failures,
        lastError: message,
        lastErrorAt: now().toISOString(),
        nextRenewal: next.toISOString(),
      });
      this.#wake(wait);
    }
  }

  /** The next renewal of `certificate`: the CA's window when it offers one, else two thirds of its lifetime. */
  async #schedule(certificate: X509Certificate): Promise<void> {
    let at = dueAt(certificate);
    try {
      const window = await (await this.#options.session()).renewalWindow(certificate);
      if (window)
        at = new Date(window.start.getTime() + Math.random() * (window.end.getTime() - window.start.getTime()));
    } catch (error) {
      // The CA's renewal information is advice (RFC 9773 §4.3.3): without it, the lifetime decides.
      this.#options.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'ACME renewal info unavailable',
      );
    }
    this.#setStatus({
      issuer: certificate.issuer,
      serial: certificate.serialNumber,
      notAfter: certificate.validToDate.toISOString(),
      nextRenewal: at.toISOString(),
    });
    this.#wake(Math.max(0, at.getTime() - this.#options.now().getTime()));
  }

  #setStatus(change: Partial<AcmeStatus>): void {
    this.#status = { ...this.#status, ...change };
    this.#options.store.saveStatus(this.#status);
  }
}
