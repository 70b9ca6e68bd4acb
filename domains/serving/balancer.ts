/**
 * A deployment's replicas in one process: which one takes the next request, and which are out.
 *
 * Balancing is least outstanding requests over two random choices, weighted, as Envoy's default `LEAST_REQUEST`
 * load balancer
 * (https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/load_balancers):
 * two replicas drawn in proportion to their weights, the one with fewer requests in flight per unit of weight
 * wins. It needs no coordination between processes and avoids the herd that "always the least loaded" causes.
 *
 * A replica is out of rotation when the primary's active probes ejected it (health.ts, every process reads the
 * verdict) or when this process ejected it passively (outlier detection, as Envoy's `consecutive_5xx`,
 * https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/outlier): after `consecutiveFailures`
 * connect failures, resets or 5xx answers in a row, for `baseEjectionMs` doubled with each ejection in a row, at
 * most `maxEjectionMs`, but never the last one in rotation. A replica ejected because it could not be reached is
 * checked with a TCP connect every `baseEjectionMs` and taken back as soon as one opens, so a restarted replica
 * gets traffic again within that time however long it was down; one ejected for its answers (it is up, and
 * failing) waits its ejection out.
 */
import type { Pool } from 'undici';
import type { PathMap } from './headers.ts';
import { tcpProbe } from './health.ts';

export interface OutlierSettings {
  readonly consecutiveFailures: number;
  readonly baseEjectionMs: number;
  readonly maxEjectionMs: number;
}

export type FailureKind = 'connect' | 'reset' | 'status';

export class Replica {
  /** Requests in flight to it from this process. */
  outstanding = 0;
  /** Set by the primary's probes (health.ts), read by every process. */
  activelyEjected = false;
  #failuresInRow = 0;
  #ejectionsInRow = 0;
  #ejectedUntil = 0;
  /** A connect probe is pending: the replica was ejected for being unreachable. */
  #probe: NodeJS.Timeout | null = null;

  constructor(
    readonly index: number,
    readonly url: string,
    readonly weight: number,
    readonly pool: Pool,
    /** Its origin and base path, for the request path and rewriting its redirects and cookies. */
    readonly upstreamOrigin: string,
    readonly basePath: string,
    private readonly outlier: OutlierSettings,
  ) {}

  get passivelyEjected(): boolean {
    return this.#probe !== null || this.#ejectedUntil > performance.now();
  }

  routable(): boolean {
    return !this.activelyEjected && !this.passivelyEjected;
  }

  /** How soon, in seconds, this replica may be back (for Retry-After). */
  backInSeconds(): number {
    if (this.#probe) return Math.ceil(this.outlier.baseEjectionMs / 1000);
    return Math.max(1, Math.ceil((this.#ejectedUntil - performance.now()) / 1000));
  }

  succeeded(): void {
    this.#failuresInRow = 0;
    this.#ejectionsInRow = 0;
  }

  /** Counts a failure; `mayEject` is false while it is the last replica in rotation. */
  failed(kind: FailureKind, mayEject: boolean): void {
    if (this.passivelyEjected) return;
    this.#failuresInRow++;
    if (this.#failuresInRow < this.outlier.consecutiveFailures || !mayEject) return;
    this.#failuresInRow = 0;
    this.#ejectionsInRow++;
    const { baseEjectionMs, maxEjectionMs } = this.outlier;
    const length = Math.min(maxEjectionMs, baseEjectionMs * 2 ** (this.#ejectionsInRow - 1));
    this.#ejectedUntil = performance.now() + length;
    if (kind !== 'status') this.#scheduleProbe();
  }

  /** Stops probing (the deployment changed or the gateway closes). */
  close(): void {
    if (this.#probe) clearTimeout(this.#probe);
    this.#probe = null;
  }

  #scheduleProbe(): void {
    this.#probe = setTimeout(() => {
      void tcpProbe(new URL(this.url.replace(/^h2c:/, 'http:')), this.outlier.baseEjectionMs).then(({ healthy }) => {
        if (this.#probe === null) return; // closed meanwhile
        if (!healthy) return this.#scheduleProbe();
        this.#probe = null;
        this.#ejectedUntil = 0;
      });
    }, this.outlier.baseEjectionMs);
    this.#probe.unref();
  }
}

export class Balancer {
  readonly #totalWeight: number;

  constructor(readonly replicas: readonly Replica[]) {
    this.#totalWeight = replicas.reduce((sum, r) => sum + r.weight, 0);
  }

  /**
   * The replica for the next attempt, or null when none is in rotation. `pinned` (cookie affinity) wins while it is
   * routable; `tried` ones are passed over while another remains.
   */
  pick(pinned: Replica | null, tried: readonly Replica[] | null): Replica | null {
    if (pinned?.routable() && !tried?.includes(pinned)) return pinned;
    const replicas = this.replicas;
    if (replicas.length === 1) {
      const only = replicas[0] as Replica;
      return only.routable() ? only : null;
    }
    const a = this.#draw(tried);
    if (!a) return null;
    const b = this.#draw(tried);
    if (!b || b === a) return a;
    return b.outstanding / b.weight < a.outstanding / a.weight ? b : a;
  }

  /**
   * Records an attempt's outcome. Passive ejection never takes the last replica in rotation out: with nowhere else
   * to send the request, the replica's own answer (or 502) tells the caller more than a refusal would.
   */
  record(replica: Replica, failure: FailureKind | null): void {
    if (failure === null) replica.succeeded();
    else
      replica.failed(
        failure,
        this.replicas.some((r) => r !== replica && r.routable()),
      );
  }

  /** Whichever replica comes back first, in seconds: the Retry-After of a deployment with none in rotation. */
  backInSeconds(): number {
    return Math.min(...this.replicas.map((r) => r.backInSeconds()));
  }

  close(): void {
    for (const replica of this.replicas) replica.close();
  }

  /** A routable replica drawn by weight; a few draws, then a scan, so ejected replicas cost little. */
  #draw(tried: readonly Replica[] | null): Replica | null {
    const replicas = this.replicas;
    for (let attempt = 0; attempt < 4; attempt++) {
      let point = Math.random() * this.#totalWeight;
      for (const replica of replicas) {
        point -= replica.weight;
        if (point < 0) {
          if (replica.routable() && !tried?.includes(replica)) return replica;
          break;
        }
      }
    }
    const usable = replicas.filter((r) => r.routable() && !tried?.includes(r));
    if (usable.length > 0) return usable[Math.floor(Math.random() * usable.length)] as Replica;
    // Every routable replica was tried: another attempt may still go to one of them (a reused socket reset).
    const routable = replicas.filter((r) => r.routable());
    return routable.length > 0 ? (routable[Math.floor(Math.random() * routable.length)] as Replica) : null;
  }
}

/** A replica's path mapping under one public prefix. */
export function replicaPathMap(replica: Replica, prefix: string, stripPrefix: boolean): PathMap {
  return { upstreamOrigin: replica.upstreamOrigin, basePath: replica.basePath, prefix, stripPrefix };
}
