/**
 * Changes the feed could not hand over, kept to be handed over again. A row is read once — the feed's position moves
 * past it before its subscribers run — so a subscriber that throws (a cache whose re-read met a dropped connection
 * or a busy database) would otherwise keep its stale state until a restart: a deleted tuple still granting, an
 * ended session still admitted. Every subscriber and reload is an invalidation or a re-read of the current rows, so
 * running one again, or after a later change of the same key, is safe.
 */
import type { Logger } from 'pino';

/**
 * Keys kept per subscriber. Beyond it, a topic that can reload all its state does so instead (one reload covers
 * every key); an event topic (a stop, a cancel) drops its oldest, logged.
 */
const MAX_KEPT = 1000;

interface Kept {
  readonly topic: string;
  /** In the order they failed (a Set keeps insertion order); a key failing again moves to the end. */
  readonly keys: Set<string>;
}

export class FailedDeliveries {
  readonly #deliveries = new Map<(key: string) => void, Kept>();
  readonly #reloads = new Map<() => void, string>();

  constructor(
    private readonly logger: Logger,
    /** The topic's full reloads (the feed's onReset), if it has any. */
    private readonly reloadsOf: (topic: string) => readonly (() => void)[],
  ) {}

  /** Hands `key` to `onChange`; if it throws, the delivery is logged and kept. */
  deliver(topic: string, onChange: (key: string) => void, key: string): void {
    try {
      onChange(key);
    } catch (error) {
      this.logger.error({ err: error, topic }, 'change feed subscriber failed; it is tried again at every poll');
      this.#keep(topic, onChange, key);
    }
  }

  /** Runs a topic's full reload; if it throws, it is logged and kept. */
  reload(topic: string, reload: () => void): void {
    try {
      reload();
    } catch (error) {
      this.logger.error({ err: error, topic }, 'change feed reload failed; it is tried again at every poll');
      this.#reloads.set(reload, topic);
    }
  }

  /**
   * Every kept reload and delivery again, oldest first; a subscriber still failing keeps the rest of its keys for
   * the next poll. Not logged again while they fail: once when they fail first, once when they went through.
   */
  retry(): void {
    for (const [reload, topic] of this.#reloads) {
      if (!this.#ran(() => reload())) continue;
      this.#reloads.delete(reload);
      this.logger.warn({ topic }, 'change feed: a failed reload went through');
    }
    for (const [onChange, kept] of this.#deliveries) {
      for (const key of kept.keys) {
        if (!this.#ran(() => onChange(key))) break;
        kept.keys.delete(key);
      }
      if (kept.keys.size > 0) continue;
      this.#deliveries.delete(onChange);
      this.logger.warn({ topic: kept.topic }, 'change feed: failed deliveries went through');
    }
  }

  /** Anything still waiting to go through (tests and stats). */
  get pending(): number {
    let keys = this.#reloads.size;
    for (const kept of this.#deliveries.values()) keys += kept.keys.size;
    return keys;
  }

  #keep(topic: string, onChange: (key: string) => void, key: string): void {
    let kept = this.#deliveries.get(onChange);
    if (!kept) {
      kept = { topic, keys: new Set() };
      this.#deliveries.set(onChange, kept);
    }
    kept.keys.delete(key);
    kept.keys.add(key);
    if (kept.keys.size <= MAX_KEPT) return;
    const reloads = this.reloadsOf(topic);
    if (reloads.length > 0) {
      this.#deliveries.delete(onChange);
      for (const reload of reloads) this.#reloads.set(reload, topic);
      return;
    }
    const [oldest] = kept.keys as Iterable<string>;
    kept.keys.delete(oldest as string);
    this.logger.error({ topic, key: oldest }, 'change feed: too many failed deliveries kept; the oldest is dropped');
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
