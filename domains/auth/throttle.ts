/**
 * Login throttling: token buckets per client address and per username, and a
 * bounded, fair queue in front of password hashing (OWASP Authentication
 * Cheat Sheet "Login Throttling"; NIST SP 800-63B §5.2.2).
 *
 * - A client address that keeps failing is blocked (429 + Retry-After, RFC 9110 §10.2.3)
 *   until its bucket refills; IPv6 clients are keyed by their /64, which one host usually holds whole.
 * - A username that keeps failing only slows: while its bucket is empty, clients that failed
 *   recently are refused. A client that signed in to it before (within `knownClientSeconds`)
 *   still gets its attempt, so the owner is never locked out from where they usually sign in.
 *   Other clients with no failure within the lockout window share a small bucket of their own
 *   per username (`lockedAccountCleanTries`), so spraying the name from a whole IPv6 /48
 *   (65,536 clean /64s) still buys only that many guesses per window, not one per address.
 * - Hashes run a few at a time, taken round-robin across client addresses, so a flood from
 *   some clients waits behind itself, not in front of everyone else; past the per-client and
 *   total bounds a login is refused at once instead of queued.
 */
import type { Logger } from 'pino';
import type { Config } from '../../gateway/config/schema.ts';
import { clientKey } from '../../gateway/http/client-key.ts';
import { AuthErrors } from './errors.ts';

type ThrottleSettings = Config['auth']['throttle'];

/** Failure buckets: each failure takes a token, tokens come back one per `refillMs`. */
export class FailureBuckets {
  /** Oldest failure first (a key is re-inserted on each failure), so eviction drops the longest-quiet keys. */
  readonly #entries = new Map<string, { tokens: number; atMs: number }>();

  constructor(
    private readonly capacity: number,
    private readonly refillMs: number,
    private readonly maxKeys: number,
  ) {}

  level(key: string, nowMs: number): number {
    const entry = this.#entries.get(key);
    return entry ? Math.min(this.capacity, entry.tokens + (nowMs - entry.atMs) / this.refillMs) : this.capacity;
  }

  /** Milliseconds since the key's last failure; Infinity when none is remembered. */
  quietFor(key: string, nowMs: number): number {
    const entry = this.#entries.get(key);
    return entry ? nowMs - entry.atMs : Number.POSITIVE_INFINITY;
  }

  /** Records a failure; true when it took the last token (the moment the key locks). */
  fail(key: string, nowMs: number): boolean {
    const before = this.level(key, nowMs);
    const tokens = Math.max(0, before - 1);
    this.#entries.delete(key);
    this.#entries.set(key, { tokens, atMs: nowMs });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.maxKeys) break;
      this.#entries.delete(oldest);
    }
    return before >= 1 && tokens < 1;
  }

  retryAfterSeconds(key: string, nowMs: number): number {
    return Math.max(1, Math.ceil(((1 - this.level(key, nowMs)) * this.refillMs) / 1000));
  }
}

/** Round-robin over clients with work waiting; `concurrency` run at once; bounded per client and in all. */
export class FairQueue {
  readonly #waiting = new Map<string, (() => void)[]>();
  readonly #pending = new Map<string, number>();
  #total = 0;
  #running = 0;

  constructor(
    private readonly concurrency: number,
    private readonly perClient: number,
    private readonly total: number,
  ) {}

  async run<T>(client: string, work: () => Promise<T>): Promise<T> {
    const mine = this.#pending.get(client) ?? 0;
    if (mine >= this.perClient) throw AuthErrors.make.too_many_attempts({ retry_after: 1 });
    if (this.#total >= this.total) throw AuthErrors.make.login_busy({ retry_after: 1 });
    this.#pending.set(client, mine + 1);
    this.#total += 1;
    let started = false;
    try {
      await new Promise<void>((resolve) => {
        const queue = this.#waiting.get(client);
        if (queue) queue.push(resolve);
        else this.#waiting.set(client, [resolve]);
        this.#pump();
      });
      started = true;
      return await work();
    } finally {
      if (started) this.#running -= 1;
      this.#total -= 1;
      const left = (this.#pending.get(client) ?? 1) - 1;
      if (left > 0) this.#pending.set(client, left);
      else this.#pending.delete(client);
      this.#pump();
    }
  }

  #pump(): void {
    while (this.#running < this.concurrency) {
      const next = this.#waiting.entries().next();
      if (next.done) return;
      const [client, queue] = next.value;
      const start = queue.shift() as () => void;
      // Served once: the client goes to the back of the rotation (or leaves it when drained).
      this.#waiting.delete(client);
      if (queue.length > 0) this.#waiting.set(client, queue);
      this.#running += 1;
      start();
    }
  }
}

/** (username, client) pairs that signed in, with when; bounded, the longest-unseen dropped first. */
class KnownClients {
  readonly #seenAtMs = new Map<string, number>();

  constructor(
    private readonly forMs: number,
    private readonly maxKeys: number,
  ) {}

  remember(account: string, client: string, nowMs: number): void {
    const key = `${client} ${account}`;
    this.#seenAtMs.delete(key);
    this.#seenAtMs.set(key, nowMs);
    for (const oldest of this.#seenAtMs.keys()) {
      if (this.#seenAtMs.size <= this.maxKeys) break;
      this.#seenAtMs.delete(oldest);
    }
  }

  knows(account: string, client: string, nowMs: number): boolean {
    const at = this.#seenAtMs.get(`${client} ${account}`);
    return at !== undefined && nowMs - at < this.forMs;
  }
}

export class LoginThrottle {
  readonly #clients: FailureBuckets;
  readonly #accounts: FailureBuckets;
  /** Per username: the guesses clean clients may still make while it is locked. */
  readonly #lockedAccountTries: FailureBuckets;
  readonly #known: KnownClients;
  readonly #queue: FairQueue;
  /**
   * A client is "clean" for a locked username when it has not failed for this long: the time the username needs to
   * recover.
   */
  readonly #lockoutWindowMs: number;

  constructor(
    settings: ThrottleSettings,
    private readonly logger: Logger,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.#clients = new FailureBuckets(settings.clientBurst, settings.clientRefillSeconds * 1000, settings.trackedKeys);
    this.#accounts = new FailureBuckets(
      settings.accountBurst,
      settings.accountRefillSeconds * 1000,
      settings.trackedKeys,
    );
    this.#lockedAccountTries = new FailureBuckets(
      settings.lockedAccountCleanTries,
      settings.accountRefillSeconds * 1000,
      settings.trackedKeys,
    );
    this.#known = new KnownClients(settings.knownClientSeconds * 1000, settings.trackedKeys);
    this.#queue = new FairQueue(settings.hashConcurrency, settings.hashQueuePerClient, settings.hashQueueTotal);
    this.#lockoutWindowMs = settings.accountBurst * settings.accountRefillSeconds * 1000;
  }

  /**
   * Runs one password check for `username` from `address` under the throttle. Throws
   * too_many_attempts / login_busy instead of checking; records a failure when `check` gives null.
   */
  async attempt<T>(address: string | undefined, username: string, check: () => Promise<T | null>): Promise<T | null> {
    const client = clientKey(address);
    // Usernames are attacker-chosen: bound what one can cost in memory and in a log line.
    const account = username.slice(0, 256);
    this.#admit(client, account);
    const result = await this.#queue.run(client, () => {
      // Re-checked once dequeued: the client's earlier attempts in the queue may have locked it meanwhile.
      this.#admit(client, account);
      return check();
    });
    if (result === null) this.#failed(client, account);
    else this.#known.remember(account, client, this.nowMs());
    return result;
  }

  #admit(client: string, account: string): void {
    const now = this.nowMs();
    if (this.#clients.level(client, now) < 1) {
      throw AuthErrors.make.too_many_attempts({ retry_after: this.#clients.retryAfterSeconds(client, now) });
    }
    if (this.#accounts.level(account, now) >= 1 || this.#known.knows(account, client, now)) return;
    if (this.#clients.quietFor(client, now) < this.#lockoutWindowMs) {
      throw AuthErrors.make.too_many_attempts({ retry_after: this.#accounts.retryAfterSeconds(account, now) });
    }
    if (this.#lockedAccountTries.level(account, now) < 1) {
      throw AuthErrors.make.too_many_attempts({
        retry_after: this.#lockedAccountTries.retryAfterSeconds(account, now),
      });
    }
  }

  #failed(client: string, account: string): void {
    const now = this.nowMs();
    if (this.#clients.fail(client, now)) {
      const retryAfter = this.#clients.retryAfterSeconds(client, now);
      this.logger.warn(
        { event: 'login_lockout', scope: 'client', client, retry_after_seconds: retryAfter },
        'login throttled: client address',
      );
    }
    // A failure on a locked username came through the clean clients' bucket (or from a known client): it pays there.
    if (this.#accounts.level(account, now) < 1 && !this.#known.knows(account, client, now))
      this.#lockedAccountTries.fail(account, now);
    if (this.#accounts.fail(account, now)) {
      const retryAfter = this.#accounts.retryAfterSeconds(account, now);
      this.logger.warn(
        { event: 'login_lockout', scope: 'account', username: account, retry_after_seconds: retryAfter },
        'login throttled: username',
      );
    }
  }
}
