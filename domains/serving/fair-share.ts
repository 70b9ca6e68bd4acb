/**
 * A client's fair share of an upstream's pool, at two levels. HTTP/2 lets
 * one connection carry many streams at once; proxied one-for-one, a single
 * client could hold every pooled upstream connection while everyone else
 * queues behind it. So each client connection may have at most
 * `perConnection` requests in flight to one upstream, and all connections
 * from one client address (IPv6: its /64, gateway/http/client-key.ts) at
 * most `perAddress` — without the second bound, one client opening eight
 * connections would take eight shares. Further requests wait, in order, on
 * their own share — never in the shared pool queue — and start as the
 * client's earlier requests finish. Waiting rather than refusing, because
 * the wait is already bounded: a connection has at most
 * SETTINGS_MAX_CONCURRENT_STREAMS streams open, and each running request at
 * most the upstream timeout. Modelled on nginx `limit_conn` keyed per client
 * address and Envoy's per-connection stream limits, applied per upstream
 * instead of per listener.
 */
import type { Http2ServerRequest } from 'node:http2';
import { clientKey } from '../../gateway/http/client-key.ts';
import type { NodeRequest, NodeResponse } from '../../gateway/http/context.ts';

/** Frees the slot; safe to call more than once. */
export type Release = () => void;

interface Share {
  active: number;
  waiting: Array<() => void>;
}

/** Up to `limit` slots per key; a waiter is admitted in arrival order, and a key's entry goes when it is idle. */
class KeyedSlots<K> {
  readonly #shares = new Map<K, Share>();

  constructor(private readonly limit: number) {}

  /**
   * A slot for `key`: at once when one is free (most requests; no promise, no microtask turn), else a promise of one,
   * null when the client closed `res` while it waited.
   */
  acquire(key: K, res: NodeResponse): Release | Promise<Release | null> {
    const taken = this.take(key);
    if (taken) return this.releaser(key, taken);
    const held = this.#shares.get(key) as Share;
    return wait(held, res).then((admitted) => (admitted ? this.releaser(key, held) : null));
  }

  /**
   * The slot of `key` if one is free now, else null. A freed slot is handed straight to the next waiter (give), so
   * a newcomer cannot slip in ahead of one.
   */
  take(key: K): Share | null {
    let share = this.#shares.get(key);
    if (!share) {
      share = { active: 0, waiting: [] };
      this.#shares.set(key, share);
    }
    if (share.active >= this.limit) return null;
    share.active += 1;
    return share;
  }

  /** Gives back a slot of `key`: to the next waiter if there is one. Once per slot taken or admitted. */
  give(key: K, held: Share): void {
    const next = held.waiting.shift();
    if (next) {
      next();
      return;
    }
    held.active -= 1;
    if (held.active === 0) this.#shares.delete(key);
  }

  releaser(key: K, held: Share): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.give(key, held);
    };
  }
}

/** Resolves true when a slot frees up, false if the client closes the request first. */
function wait(share: Share, res: NodeResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const admit = () => {
      res.off('close', leave);
      resolve(true);
    };
    const leave = () => {
      const at = share.waiting.indexOf(admit);
      if (at >= 0) share.waiting.splice(at, 1);
      resolve(false);
    };
    share.waiting.push(admit);
    res.once('close', leave);
  });
}

export class ClientShares {
  /**
   * Keyed by the client connection (h2 session or h1 socket), then the upstream, so a closed connection's entry goes
   * with it.
   */
  readonly #byConnection = new WeakMap<object, KeyedSlots<object>>();
  /** Keyed by the upstream, then the client address key. */
  readonly #byAddress = new WeakMap<object, KeyedSlots<string>>();

  constructor(
    readonly perConnection: number,
    readonly perAddress: number,
  ) {}

  /**
   * A slot for this request's connection and address to `upstream`: at once when both are free, else a promise of
   * one; null when the client left while it waited.
   */
  acquire(req: NodeRequest, res: NodeResponse, upstream: object): Release | null | Promise<Release | null> {
    const connection = req.httpVersionMajor === 2 ? (req as Http2ServerRequest).stream.session : req.socket;
    if (!connection) return null; // the session is already gone
    const connectionSlots = slotsOf(this.#byConnection, connection, this.perConnection);
    const addressSlots = slotsOf(this.#byAddress, upstream, this.perAddress);
    const address = clientKey(req.socket?.remoteAddress);
    // Most requests find both slots free: one release for both, no promise.
    const viaConnection = connectionSlots.take(upstream);
    const viaAddress = viaConnection && addressSlots.take(address);
    if (viaConnection && viaAddress) {
      let released = false;
      return () => {
        if (released) return;
        released = true;
        addressSlots.give(address, viaAddress);
        connectionSlots.give(upstream, viaConnection);
      };
    }
    // The connection's slot first: a request waiting for its address holds only what its own connection could use.
    const ofConnection = viaConnection
      ? connectionSlots.releaser(upstream, viaConnection)
      : connectionSlots.acquire(upstream, res);
    if (typeof ofConnection === 'function') return withAddress(ofConnection, addressSlots.acquire(address, res));
    return ofConnection.then((slot) => (slot ? withAddress(slot, addressSlots.acquire(address, res)) : null));
  }
}

function slotsOf<K>(byOwner: WeakMap<object, KeyedSlots<K>>, owner: object, limit: number): KeyedSlots<K> {
  let slots = byOwner.get(owner);
  if (!slots) {
    slots = new KeyedSlots(limit);
    byOwner.set(owner, slots);
  }
  return slots;
}

/** Both slots as one release; the connection's is given back when the address slot never came. */
function withAddress(
  ofConnection: Release,
  ofAddress: Release | Promise<Release | null>,
): Release | Promise<Release | null> {
  const both = (slot: Release | null): Release | null => {
    if (!slot) {
      ofConnection();
      return null;
    }
    return () => {
      slot();
      ofConnection();
    };
  };
  return typeof ofAddress === 'function' ? (both(ofAddress) as Release) : ofAddress.then(both);
}
