/**
 * Changes the feed could not hand over, kept to be handed over again. A row is read once — the feed's position moves
 * past it before its subscribers run — so a subscriber that throws (a cache whose re-read met a dropped connection
 * or a busy database) would otherwise keep its stale state until a restart: a deleted tuple still granting, an
 * ended session still admitted. Every subscriber and reload is an invalidation or a re-read of the current rows, so
 * running one again, or after a later change of the same key, is safe.
 *
 * Retries back off: a database that cannot answer makes each attempt wait out its timeout (seconds, the event loop
 * blocked), and the feed is polled on every authenticated request. So one round runs at most every RETRY_MIN_MS,
 * doubling to RETRY_MAX_MS while rounds fail, and a round stops at its first failure.
 */
import type { Logger } from 'pino';

/**
 * Keys kept per subscriber and topic. Beyond it, a topic that can reload all its state does so instead (one reload
 * covers every key); an event topic (a stop, a cancel) drops its oldest, logged.
 */
const MAX_KEPT = 1000;
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 10_000;

interface Kept {
  readonly topic: string;
  readonly onChange: (key: string) => void;
  /** In the order they failed (a Set keeps insertion order); a key failing again moves to the end. */
  readonly keys: Set<string>;
}

export class FailedDeliveries {
  /** Few: one per subscriber and topic that failed; found by a scan. */
  readonly #deliveries: Kept[] = [];
  readonly #reloads = new Map<() => void, string>();
  #nextRoundAt = 0;
  #backoffMs = RETRY_MIN_MS;
  #rounds = 0;

  constructor(
    private readonly logger: Logger,
    /** The topic's full reloads (the feed's onReset), if it has any. */
    private readonly reloadsOf: (topic: string) => readonly (() => void)[],
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /** Hands `key` to `onChange`; if it throws, the delivery is logged and kept. */
  deliver(topic: string, onChange: (key: string) => void, key: string): void {
    try {
      onChange(key);
    } catch (error) {
      this.logger.error({ err: error, topic }, 'change feed subscriber failed; it will be tried again');
      this.#keep(topic, onChange, key);
    }
  }

  /** Runs a topic's full reload; if it throws, it is logged and kept. */
  reload(topic: string, reload: () => void): void {
    try {
      reload();
    } catch (error) {
      this.logger.error({ err: error, topic }, 'change feed reload failed; it will be tried again');
      this.#firstFailure();
      this.#reloads.set(reload, topic);
    }
  }

  /**
   * One round of the kept reloads and deliveries, oldest first, when its backoff allows. The first failure ends the
   * round (its key moves to the end, so one key that always fails holds back no other); not logged again while
   * they fail, once when they went through.
   */
  retry(): void {
    if (this.pending === 0 || this.nowMs() < this.#nextRoundAt) return;
    // Reloads and deliveries take turns going first, so a reload that always fails holds back no delivery.
    this.#rounds += 1;
    const completed =
      this.#rounds % 2 === 0
        ? this.#retryReloads() && this.#retryDeliveries()
        : this.#retryDeliveries() && this.#retryReloads();
    this.#backoffMs = completed ? RETRY_MIN_MS : Math.min(this.#backoffMs * 2, RETRY_MAX_MS);
    this.#nextRoundAt = completed ? 0 : this.nowMs() + this.#backoffMs;
  }

  /** Anything still waiting to go through (tests and stats). */
  get pending(): number {
    let keys = this.#reloads.size;
    for (const kept of this.#deliveries) keys += kept.keys.size;
    return keys;
  }

  #retryReloads(): boolean {
    for (const [reload, topic] of this.#reloads) {
      this.#reloads.delete(reload);
      if (!this.#ran(() => reload())) {
        // To the back: a reload that always fails holds back no other.
        this.#reloads.set(reload, topic);
        return false;
      }
      this.logger.warn({ topic }, 'change feed: a failed reload went through');
    }
    return true;
  }

  #retryDeliveries(): boolean {
    for (const kept of [...this.#deliveries]) {
      for (const key of kept.keys) {
        kept.keys.delete(key);
        if (this.#ran(() => kept.onChange(key))) continue;
        // The key to the back of its subscriber's, the subscriber to the back of all: one that always fails holds
        // back no other.
        kept.keys.add(key);
        this.#deliveries.splice(this.#deliveries.indexOf(kept), 1);
        this.#deliveries.push(kept);
        return false;
      }
      this.#deliveries.splice(this.#deliveries.indexOf(kept), 1);
      this.logger.warn({ topic: kept.topic }, 'change feed: failed deliveries went through');
    }
    return true;
  }

  #keep(topic: string, onChange: (key: string) => void, key: string): void {
    this.#firstFailure();
    let kept = this.#deliveries.find((k) => k.topic === topic && k.onChange === onChange);
    if (!kept) {
      kept = { topic, onChange, keys: new Set() };
      this.#deliveries.push(kept);
    }
    kept.keys.delete(key);
    kept.keys.add(key);
    if (kept.keys.size <= MAX_KEPT) return;
    const reloads = this.reloadsOf(topic);
    if (reloads.length > 0) {
      this.#deliveries.splice(this.#deliveries.indexOf(kept), 1);
      for (const reload of reloads) this.#reloads.set(reload, topic);
      return;
    }
    const [oldest] = kept.keys as Iterable<string>;
    kept.keys.delete(oldest as string);
    this.logger.error({ topic, key: oldest }, 'change feed: too many failed deliveries kept; the oldest is dropped');
  }

  /** The first thing kept waits RETRY_MIN_MS too: the next poll may be the very next request. */
  #firstFailure(): void {
    if (this.pending > 0) return;
    this.#backoffMs = RETRY_MIN_MS;
    this.#nextRoundAt = this.nowMs() + RETRY_MIN_MS;
  }

  #ran(run: () => void): boolean {
    try {
      run();
      return true;
    } catch {
      return false;
    }
  }
}
