/**
 * The data plane of each deployment in this process: its replicas' connection pools and balancer, its admission
 * gate and its retry budget. Kept per deployment (not per target: the path-based and legacy-port fronts of one
 * deployment share them), rebuilt when its replicas change, and its gate carried over so requests in flight stay
 * counted. Pools are per replica origin and protocol: `h2c://` replicas get cleartext HTTP/2 with prior knowledge
 * (few connections, many streams each, as gRPC needs); `https://` ones HTTP/2 when the replica selects it by ALPN.
 * A pool lives while some plane uses it: a deployment deleted (`retire`) or moved to other replicas releases the
 * pools no other deployment shares.
 */
import { Pool } from 'undici';
import { Balancer, type OutlierSettings, Replica } from './balancer.ts';
import { AdmissionGate } from './fair-share.ts';
import type { ProxyObservability } from './proxy-metrics.ts';
import { RetryBudget } from './retry.ts';
import type { ReplicaRecord } from './schema.ts';
import type { MinuteSeries } from './series.ts';
import type { ReplicaHealthRow } from './store.ts';

/** Streams per cleartext HTTP/2 connection, and connections per h2c replica: multiplexing, not fan-out. */
const H2C_STREAMS = 256;
const H2C_CONNECTIONS = 4;

export interface PlaneSettings {
  readonly connections: number;
  readonly maxConcurrent: number;
  readonly queueTimeoutMs: number;
  readonly outlier: OutlierSettings;
}

/** What a deployment asks of its plane. */
export interface PlaneSpec {
  readonly label: string;
  readonly replicas: readonly ReplicaRecord[];
  readonly maxConcurrent: number | null;
  readonly queueTimeoutMs: number | null;
}

export class Plane {
  constructor(
    readonly signature: string,
    readonly balancer: Balancer,
    readonly gate: AdmissionGate,
    readonly budget: RetryBudget,
  ) {}
}

export class DataPlanes {
  readonly #pools = new Map<string, { pool: Pool; label: string }>();
  readonly #planes = new Map<string, Plane>();
  /** Released pools still finishing the requests they carry. */
  readonly #closing = new Set<Pool>();
  readonly observed: ProxyObservability;

  constructor(
    private readonly settings: PlaneSettings,
    observe: (pools: () => Iterable<[Pool, string]>) => ProxyObservability,
    /** Each deployment's answers minute by minute, for the console's charts. */
    readonly series: MinuteSeries,
  ) {
    this.observed = observe(() => [...this.#pools.values()].map(({ pool, label }) => [pool, label]));
    this.observed.declarePlanes(() => this.#planes.entries());
  }

  /** The plane of `spec.label`, rebuilt when its replicas changed; its gate follows the spec's limits. */
  plane(spec: PlaneSpec): Plane {
    const signature = JSON.stringify(spec.replicas);
    let plane = this.#planes.get(spec.label);
    const capacity = spec.maxConcurrent ?? this.settings.maxConcurrent;
    const queueTimeoutMs = spec.queueTimeoutMs ?? this.settings.queueTimeoutMs;
    if (plane && plane.signature === signature) {
      plane.gate.capacity = capacity;
      plane.gate.queueTimeoutMs = queueTimeoutMs;
      return plane;
    }
    plane?.balancer.close();
    const replicas = spec.replicas.map((r, index) => {
      const url = new URL(r.url);
      const origin = `${url.protocol === 'h2c:' ? 'http:' : url.protocol}//${url.host}`;
      const pool = this.#pool(`${url.protocol}//${url.host}`, origin, url.protocol === 'h2c:', spec.label);
      const basePath = url.pathname.replace(/\/+$/, '');
      return new Replica(index, r.url, r.weight, pool, origin, basePath, this.settings.outlier);
    });
    const gate =
      plane?.gate ?? new AdmissionGate(capacity, queueTimeoutMs, spec.label, this.observed.inFlight.labels(spec.label));
    gate.capacity = capacity;
    gate.queueTimeoutMs = queueTimeoutMs;
    const replaced = plane !== undefined;
    plane = new Plane(signature, new Balancer(replicas), gate, plane?.budget ?? new RetryBudget());
    this.#planes.set(spec.label, plane);
    if (replaced) this.#releaseUnused();
    return plane;
  }

  /** Whether `label` has a plane in this process (a deployment it has served since it started). */
  has(label: string): boolean {
    return this.#planes.has(label);
  }

  /** The labels with a plane: deployment ids, and the operator services' names. */
  labels(): string[] {
    return [...this.#planes.keys()];
  }

  /**
   * A deployment that is gone: its plane leaves (its balancer stops probing), its series leave the metrics, and the
   * pools no other plane uses are released.
   */
  retire(label: string): void {
    const plane = this.#planes.get(label);
    if (!plane) return;
    plane.balancer.close();
    this.#planes.delete(label);
    this.observed.forget(label, () => plane.gate.active + plane.gate.waiting > 0);
    this.#releaseUnused();
  }

  /** The primary's verdicts (health.ts): a replica ejected by its probes leaves every process's rotation. */
  applyVerdicts(rows: readonly ReplicaHealthRow[]): void {
    const ejected = new Set(rows.filter((r) => r.ejected).map((r) => `${r.deploymentId} ${r.replica}`));
    for (const [label, plane] of this.#planes)
      for (const replica of plane.balancer.replicas) replica.activelyEjected = ejected.has(`${label} ${replica.url}`);
  }

  async close(): Promise<void> {
    for (const plane of this.#planes.values()) plane.balancer.close();
    this.#planes.clear();
    const pools = [...this.#pools.values()].map((p) => p.pool);
    this.#pools.clear();
    pools.push(...this.#closing);
    this.#closing.clear();
    await Promise.all(pools.map((pool) => pool.destroy()));
  }

  /**
   * Closes the pools no plane uses, gracefully (undici's `Pool.close`): idle keep-alive connections close at once,
   * busy ones once the requests they carry end, which costs nothing to arrange and cuts no answer short (a deleted
   * deployment's open streams are cut by their own access check). A shared pool is named after a plane still using it.
   */
  #releaseUnused(): void {
    const users = new Map<Pool, string[]>();
    for (const [label, plane] of this.#planes)
      for (const { pool } of plane.balancer.replicas) {
        const labels = users.get(pool);
        if (!labels) users.set(pool, [label]);
        else if (!labels.includes(label)) labels.push(label);
      }
    for (const [key, entry] of this.#pools) {
      const labels = users.get(entry.pool);
      if (labels) {
        if (!labels.includes(entry.label)) entry.label = labels[0] as string;
        continue;
      }
      this.#pools.delete(key);
      this.#closing.add(entry.pool);
      // A pool destroyed by close() meanwhile rejects its close: it is gone either way.
      void entry.pool
        .close()
        .catch(() => {})
        .finally(() => this.#closing.delete(entry.pool));
    }
  }

  /** One keep-alive pool per replica origin and protocol; `label` names it in the metrics when this call creates it. */
  #pool(key: string, origin: string, h2c: boolean, label: string): Pool {
    let entry = this.#pools.get(key);
    if (!entry) {
      const pool = new Pool(origin, {
        ...(h2c
          ? { useH2c: true, connections: H2C_CONNECTIONS, pipelining: H2C_STREAMS, maxConcurrentStreams: H2C_STREAMS }
          : { connections: this.settings.connections, pipelining: 1 }),
        keepAliveTimeout: 30_000,
        connect: { timeout: 10_000 },
      });
      entry = { pool, label };
      this.#pools.set(key, entry);
    }
    return entry.pool;
  }
}
