/**
 * A deployment's requests in flight from this process, shared fairly only under contention. While fewer than
 * `capacity` run, every request starts at once, whoever sends it: one client streaming a thousand completions gets a
 * thousand slots, since nobody else is kept waiting. Once full, a request waits, and each freed slot goes to the
 * waiting caller with the fewest requests in flight (max-min fairness; first come among equals), so a caller with
 * many requests queued cannot keep one with few from its turn. A caller is the signed-in user, or for anonymous
 * requests the client address (IPv6: its /64, gateway/http/client-key.ts): behind a load balancer or a NAT all
 * users share an address, and still each gets a share. Among callers with as many in flight, the one served longest
 * ago goes first, so with a single slot callers take turns. A wait is bounded by `queueTimeoutMs`, then the request is
 * refused with `503 upstream_busy` and Retry-After (RFC 9110 §10.2.3) rather than held indefinitely.
 */
import type { NodeResponse } from '../../gateway/http/context.ts';
import { ServingErrors } from './errors.ts';

/** Frees the slot; safe to call more than once (only the first call counts). */
export type Release = () => void;

interface Waiter {
  admit: () => void;
}

interface Caller {
  active: number;
  waiting: Waiter[];
  /** When it was last given a slot (the gate's admission count): among equals, the longest unserved goes first. */
  servedAt: number;
}

export class AdmissionGate {
  #active = 0;
  #admissions = 0;
  readonly #callers = new Map<string, Caller>();
  /** Callers with at least one request waiting. */
  readonly #waitingCallers = new Set<Caller>();

  constructor(
    /** Slots; the deployment's `max_concurrent` may change it (an edit), effective for the next admission. */
    public capacity: number,
    public queueTimeoutMs: number,
    private readonly label: string,
    /**
     * The deployment's in-flight gauge, counted with the slots: up at each admission, down at its release. The release
     * answers only its first call, so whoever ends a request may call it without a guard of its own.
     */
    private readonly inFlight: { inc(): void; dec(): void } | null = null,
  ) {}

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    let n = 0;
    for (const caller of this.#waitingCallers) n += caller.waiting.length;
    return n;
  }

  /**
   * A slot for `caller`: at once while the deployment has room and nobody waits (most requests: no promise), else a
   * promise of one; null when the client closed `res` while it waited; rejected with `upstream_busy` after
   * `queueTimeoutMs`.
   */
  acquire(key: string, res: NodeResponse): Release | Promise<Release | null> {
    const caller = this.#caller(key);
    if (this.#active < this.capacity && this.#waitingCallers.size === 0) {
      this.#active++;
      caller.active++;
      caller.servedAt = ++this.#admissions;
      this.inFlight?.inc();
      return this.#releaser(key, caller);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(timer);
          res.off('close', leave);
          resolve(this.#releaser(key, caller));
        },
      };
      const leave = () => {
        clearTimeout(timer);
        this.#unqueue(key, caller, waiter);
        resolve(null);
      };
      const timer = setTimeout(() => {
        res.off('close', leave);
        this.#unqueue(key, caller, waiter);
        const retryAfter = Math.max(1, Math.ceil(this.queueTimeoutMs / 1000));
        reject(ServingErrors.make.upstream_busy({ upstream: this.label, retry_after: retryAfter }));
      }, this.queueTimeoutMs);
      caller.waiting.push(waiter);
      this.#waitingCallers.add(caller);
      res.once('close', leave);
      // A slot may be free already (capacity raised, or others queued ahead of a free slot): hand it out.
      this.#drain();
    });
  }

  #caller(key: string): Caller {
    let caller = this.#callers.get(key);
    if (!caller) {
      caller = { active: 0, waiting: [], servedAt: 0 };
      this.#callers.set(key, caller);
    }
    return caller;
  }

  #releaser(key: string, caller: Caller): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
      caller.active--;
      this.inFlight?.dec();
      this.#forgetIdle(key, caller);
      this.#drain();
    };
  }

  /**
   * Hands free slots to waiters: the caller with the fewest in flight first, among equals the one served longest
   * ago (round robin), each caller's own requests in arrival order.
   */
  #drain(): void {
    while (this.#active < this.capacity && this.#waitingCallers.size > 0) {
      let next: Caller | undefined;
      for (const caller of this.#waitingCallers) {
        if (!next || caller.active < next.active || (caller.active === next.active && caller.servedAt < next.servedAt))
          next = caller;
      }
      const chosen = next as Caller;
      const waiter = chosen.waiting.shift() as Waiter;
      if (chosen.waiting.length === 0) this.#waitingCallers.delete(chosen);
      this.#active++;
      chosen.active++;
      chosen.servedAt = ++this.#admissions;
      this.inFlight?.inc();
      waiter.admit();
    }
  }

  #unqueue(key: string, caller: Caller, waiter: Waiter): void {
    const at = caller.waiting.indexOf(waiter);
    if (at >= 0) caller.waiting.splice(at, 1);
    if (caller.waiting.length === 0) this.#waitingCallers.delete(caller);
    this.#forgetIdle(key, caller);
  }

  #forgetIdle(key: string, caller: Caller): void {
    if (caller.active === 0 && caller.waiting.length === 0) this.#callers.delete(key);
  }
}
