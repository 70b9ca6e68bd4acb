/**
 * One client connection's fair share of an upstream's pool. HTTP/2 lets one
 * connection carry many streams at once; proxied one-for-one, a single
 * client could hold every pooled upstream connection while everyone else
 * queues behind it. So each client connection may have at most `limit`
 * requests in flight to one upstream; its further requests wait, in order,
 * on that connection — never in the shared pool queue — and start as its own
 * earlier requests finish. Waiting rather than refusing, because the wait is
 * already bounded: a connection has at most SETTINGS_MAX_CONCURRENT_STREAMS
 * streams open, and each running request at most the upstream timeout.
 * Modelled on nginx `limit_conn` keyed per client and Envoy's per-connection
 * stream limits, applied per upstream instead of per listener.
 */
import type { Http2ServerRequest } from 'node:http2';
import type { NodeRequest, NodeResponse } from '../../gateway/http/context.ts';

/** Frees the slot; safe to call more than once. */
export type Release = () => void;

interface Share {
  active: number;
  waiting: Array<() => void>;
}

export class ConnectionShares {
  /** Keyed by the client connection (h2 session or h1 socket) so a closed connection's entry goes with it. */
  readonly #byConnection = new WeakMap<object, Map<object, Share>>();

  constructor(readonly limit: number) {}

  /** A slot for this request's connection to `upstream`; null when the client left while it waited. */
  async acquire(req: NodeRequest, res: NodeResponse, upstream: object): Promise<Release | null> {
    const connection = req.httpVersionMajor === 2 ? (req as Http2ServerRequest).stream.session : req.socket;
    if (!connection) return null; // the session is already gone
    let shares = this.#byConnection.get(connection);
    if (!shares) {
      shares = new Map();
      this.#byConnection.set(connection, shares);
    }
    let share = shares.get(upstream);
    if (!share) {
      share = { active: 0, waiting: [] };
      shares.set(upstream, share);
    }
    // A freed slot is handed straight to the next waiter, so a newcomer cannot slip in between.
    if (share.active < this.limit) share.active += 1;
    else if (!(await this.#wait(share, res))) return null;
    let released = false;
    const owner = shares;
    const held = share;
    return () => {
      if (released) return;
      released = true;
      const next = held.waiting.shift();
      if (next) return next();
      held.active -= 1;
      if (held.active === 0) owner.delete(upstream);
    };
  }

  /** Resolves true when a slot frees up, false if the client closes the request first. */
  #wait(share: Share, res: NodeResponse): Promise<boolean> {
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
}
