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
 *
 * The buckets live in the shared database (throttle-ledger.ts), so they hold across workers and
 * nodes; the hashing queue is per process, as the CPU it guards. The client address is the one
 * the caller's trusted proxies forwarded for (gateway/http/client-address.ts), else the socket peer.
 */
import type { Logger } from 'pino';
import type { Config } from '../../gateway/config/schema.ts';
import { clientKey } from '../../gateway/http/client-key.ts';
import { AuthErrors } from './errors.ts';
import {
  type BucketRow,
  type BucketSpec,
  bucketLevel,
  retryAfterSeconds,
  type ThrottleLedger,
} from './throttle-ledger.ts';

type ThrottleSettings = Config['auth']['throttle'];

/** Failure buckets in this process's memory: each failure takes a token, tokens come back one per `refillMs`. */
export class FailureBuckets {
  /** Oldest failure first (a key is re-inserted on each failure), so eviction drops the longest-quiet keys. */
  readonly #entries = new Map<string, { tokens: number; atMs: number }>();

  constructor(
    readonly capacity: number,
    readonly refillMs: number,
    private readonly maxKeys: number,
  ) {}

  level(key: string, nowMs: number): number {
    return bucketLevel(this.#entries.get(key), this, nowMs);
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
    return retryAfterSeconds(this.level(key, nowMs), this);
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

/** What one admission reads: the buckets and the known pair of a (client, username), in one statement. */
interface Keys {
  readonly client: string;
  readonly account: string;
  readonly lockedTries: string;
  readonly known: string;
}

const keysOf = (client: string, account: string): Keys => ({
  client: `c ${client}`,
  account: `a ${account}`,
  lockedTries: `l ${account}`,
  known: `k ${client} ${account}`,
});

export class LoginThrottle {
  readonly #client: BucketSpec;
  readonly #account: BucketSpec;
  /** Per username: the guesses clean clients may still make while it is locked. */
  readonly #lockedTries: BucketSpec;
  readonly #knownMs: number;
  readonly #queue: FairQueue;
  /**
   * A client is "clean" for a locked username when it has not failed for this long: the time the username needs to
   * recover.
   */
  readonly #lockoutWindowMs: number;
  /**
   * Clients found blocked, with when they get a token back: a blocked client's further attempts are refused from
   * memory, without a statement. Failures elsewhere only ever push that moment later, so it is never too early.
   */
  readonly #blockedUntil = new Map<string, number>();

  constructor(
    private readonly settings: ThrottleSettings,
    private readonly ledger: ThrottleLedger,
    private readonly logger: Logger,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.#client = { capacity: settings.clientBurst, refillMs: settings.clientRefillSeconds * 1000 };
    this.#account = { capacity: settings.accountBurst, refillMs: settings.accountRefillSeconds * 1000 };
    this.#lockedTries = { capacity: settings.lockedAccountCleanTries, refillMs: settings.accountRefillSeconds * 1000 };
    this.#knownMs = settings.knownClientSeconds * 1000;
    this.#queue = new FairQueue(settings.hashConcurrency, settings.hashQueuePerClient, settings.hashQueueTotal);
    this.#lockoutWindowMs = settings.accountBurst * settings.accountRefillSeconds * 1000;
  }

  /** How long a bucket's row matters after its last failure: until it refilled and its quiet time decides nothing. */
  static keepMs(settings: ThrottleSettings): number {
    const { clientBurst, clientRefillSeconds, accountBurst, accountRefillSeconds, lockedAccountCleanTries } = settings;
    const longest = Math.max(
      clientBurst * clientRefillSeconds,
      Math.max(accountBurst, lockedAccountCleanTries) * accountRefillSeconds,
    );
    return longest * 1000;
  }

  /**
   * Runs one password check for `username` from `address` (the client address, behind trusted proxies the one they
   * forwarded for) under the throttle. Throws too_many_attempts / login_busy instead of checking; records a failure
   * when `check` gives null.
   */
  async attempt<T>(address: string | undefined, username: string, check: () => Promise<T | null>): Promise<T | null> {
    const client = clientKey(address);
    // Usernames are attacker-chosen: bound what one can cost in the database and in a log line.
    const keys = keysOf(client, username.slice(0, 256));
    this.#admit(keys);
    const result = await this.#queue.run(client, () => {
      // Re-checked once dequeued: the client's earlier attempts, here or in another process, may have locked it.
      this.#admit(keys);
      return check();
    });
    if (result === null) this.#failed(keys, username.slice(0, 256));
    else this.ledger.touch(keys.known, this.nowMs());
    return result;
  }

  #admit(keys: Keys): void {
    const now = this.nowMs();
    const until = this.#blockedUntil.get(keys.client);
    if (until !== undefined) {
      if (until > now) throw AuthErrors.make.too_many_attempts({ retry_after: Math.ceil((until - now) / 1000) });
      this.#blockedUntil.delete(keys.client);
    }
    const rows = this.ledger.read([keys.client, keys.account, keys.lockedTries, keys.known]);
    const clientLevel = bucketLevel(rows.get(keys.client), this.#client, now);
    if (clientLevel < 1) {
      const retryAfter = retryAfterSeconds(clientLevel, this.#client);
      this.#block(keys.client, now + (1 - clientLevel) * this.#client.refillMs);
      throw AuthErrors.make.too_many_attempts({ retry_after: retryAfter });
    }
    const accountLevel = bucketLevel(rows.get(keys.account), this.#account, now);
    if (accountLevel >= 1 || this.#knows(rows, keys, now)) return;
    const clientRow = rows.get(keys.client);
    if (clientRow && now - clientRow.atMs < this.#lockoutWindowMs) {
      throw AuthErrors.make.too_many_attempts({ retry_after: retryAfterSeconds(accountLevel, this.#account) });
    }
    const triesLevel = bucketLevel(rows.get(keys.lockedTries), this.#lockedTries, now);
    if (triesLevel < 1)
      throw AuthErrors.make.too_many_attempts({ retry_after: retryAfterSeconds(triesLevel, this.#lockedTries) });
  }

  #knows(rows: Map<string, BucketRow>, keys: Keys, now: number): boolean {
    const seen = rows.get(keys.known);
    return seen !== undefined && now - seen.atMs < this.#knownMs;
  }

  /** Bounded: the entry blocked longest ago goes first. */
  #block(client: string, untilMs: number): void {
    this.#blockedUntil.delete(client);
    this.#blockedUntil.set(client, untilMs);
    for (const oldest of this.#blockedUntil.keys()) {
      if (this.#blockedUntil.size <= this.settings.trackedKeys) break;
      this.#blockedUntil.delete(oldest);
    }
  }

  #failed(keys: Keys, username: string): void {
    const now = this.nowMs();
    const rows = this.ledger.read([keys.account, keys.known]);
    // A failure on a locked username came through the clean clients' bucket (or from a known client): it pays there.
    const throughCleanTries =
      bucketLevel(rows.get(keys.account), this.#account, now) < 1 && !this.#knows(rows, keys, now);
    const buckets = [
      { key: keys.client, spec: this.#client },
      { key: keys.account, spec: this.#account },
      ...(throughCleanTries ? [{ key: keys.lockedTries, spec: this.#lockedTries }] : []),
    ];
    const [clientBefore, accountBefore] = this.ledger.fail(buckets, now) as [number, number];
    // The failure that took a bucket's last token is the lockout, logged once whichever process saw it.
    if (clientBefore >= 1 && clientBefore - 1 < 1) {
      const client = keys.client.slice(2);
      this.logger.warn(
        {
          event: 'login_lockout',
          scope: 'client',
          client,
          retry_after_seconds: retryAfterSeconds(clientBefore - 1, this.#client),
        },
        'login throttled: client address',
      );
    }
    if (accountBefore >= 1 && accountBefore - 1 < 1) {
      this.logger.warn(
        {
          event: 'login_lockout',
          scope: 'account',
          username,
          retry_after_seconds: retryAfterSeconds(accountBefore - 1, this.#account),
        },
        'login throttled: username',
      );
    }
  }
}
