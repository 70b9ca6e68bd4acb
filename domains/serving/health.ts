/**
 * Upstream health: the process that owns background work (the primary with
 * `--workers N`, else the one process) probes every replica of every deployment
 * each `serving.healthIntervalMs`, at most `serving.healthConcurrency` at a
 * time (a deployment changed between rounds is probed sooner, through the
 * same lanes), each bounded by `serving.healthTimeoutMs`, and keeps the last result
 * in `deployment_health`; every process answers the API from that table, so
 * any worker reads the same result. A deployment with a `health_path` is
 * probed with an HTTP GET of that path below its upstream URL, healthy on a
 * 2xx or 3xx as Kubernetes' httpGet probe counts it
 * (https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/);
 * without one, a TCP connect to the upstream's host and port. A failure is
 * classified like the proxy's own (`upstream_unreachable`, `upstream_timeout`,
 * ...); its detail is the error code, never an address. The same table is
 * `meshgate_upstream_healthy` at each scrape.
 *
 * The probes act: a replica that failed `serving.healthUnhealthyThreshold` probes in a row is ejected, and admitted
 * again after `serving.healthHealthyThreshold` passed ones (Envoy's `unhealthy_threshold` / `healthy_threshold`,
 * https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/core/v3/health_check.proto). The verdict is kept in
 * `deployment_replica_health`, which every process reads each second (plane.ts) to leave ejected replicas out. A
 * deployment is healthy while any of its replicas' last probe passed.
 */
import { connect } from 'node:net';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { MetricsRegistry } from '../../gateway/observability/metrics.ts';
import { upstreamError } from './exchange.ts';
import { replicasOf } from './input.ts';
import type { DeploymentRow, DeploymentStore, HealthRow, ReplicaHealthRow } from './store.ts';

export interface HealthSettings {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly concurrency: number;
  readonly unhealthyThreshold: number;
  readonly healthyThreshold: number;
}

type ProbeResult = Pick<HealthRow, 'healthy' | 'reason' | 'detail'>;

const HEALTHY: ProbeResult = { healthy: true, reason: null, detail: null };

function failed(error: Error): ProbeResult {
  const code = (error as { code?: string }).code;
  return { healthy: false, reason: upstreamError(error, 'health').reason, detail: code ?? error.name };
}

/** A TCP connect to the replica's host and port; the socket is closed at once. */
export function tcpProbe(upstream: URL, timeoutMs: number): Promise<ProbeResult> {
  const port = Number(upstream.port) || (upstream.protocol === 'https:' ? 443 : 80);
  // URL keeps an IPv6 literal's brackets; net.connect takes the bare address.
  const host = upstream.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const timer = setTimeout(
      () => finish(failed(Object.assign(new Error('connect'), { name: 'TimeoutError' }))),
      timeoutMs,
    );
    const finish = (result: ProbeResult) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    socket.once('connect', () => finish(HEALTHY));
    socket.once('error', (error) => finish(failed(error)));
  });
}

async function httpProbe(url: string, timeoutMs: number, agent: Agent): Promise<ProbeResult> {
  const answer = await request(url, {
    dispatcher: agent,
    method: 'GET',
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
  });
  await answer.body.dump();
  const status = answer.statusCode;
  return status >= 200 && status < 400
    ? HEALTHY
    : { healthy: false, reason: 'upstream_unhealthy_status', detail: `HTTP ${status}` };
}

/**
 * 1 per deployment whose last probe found a replica healthy, 0 per one found none; and each replica's ejection. A
 * deployment not probed yet has no series. Read from the tables at each scrape (their rows go with their
 * deployment), once for all processes.
 */
export function declareHealthGauge(
  metrics: MetricsRegistry,
  store: Pick<DeploymentStore, 'health' | 'replicaHealth' | 'list'>,
): void {
  metrics.gauge({
    name: 'upstream_healthy',
    help: "Whether the last probe found any of each deployment's replicas healthy (1) or none (0), by deployment.",
    labels: ['deployment'],
    across: 'first',
    collect(gauge) {
      gauge.reset();
      for (const row of store.health()) gauge.labels(row.deploymentId).set(row.healthy ? 1 : 0);
    },
  });
  metrics.gauge({
    name: 'upstream_replica_ejected',
    help: 'Whether the probes ejected each replica (1) or not (0), by deployment and replica index.',
    labels: ['deployment', 'replica'],
    across: 'first',
    collect(gauge) {
      gauge.reset();
      const verdicts = store.replicaHealth();
      if (verdicts.length === 0) return;
      const indexes = new Map(
        store.list().flatMap((row) => replicasOf(row).map(({ url }, i) => [`${row.id} ${url}`, i] as const)),
      );
      for (const verdict of verdicts) {
        const index = indexes.get(`${verdict.deploymentId} ${verdict.replica}`);
        if (index !== undefined) gauge.labels(verdict.deploymentId, String(index)).set(verdict.ejected ? 1 : 0);
      }
    },
  });
}

export class HealthProber {
  readonly #agent: Agent;
  /** Deployments waiting for a lane, in the order asked; one entry per deployment, settled when its probe ends. */
  readonly #waiting = new Map<string, { row: DeploymentRow; ended: Promise<void>; end: () => void }>();
  /** Probes in flight, by deployment: at most one each, at most `concurrency` in all. */
  readonly #running = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(
    private readonly store: DeploymentStore,
    private readonly settings: HealthSettings,
    private readonly now: () => Date,
    private readonly logger: Logger,
  ) {
    // Its own agent: probes neither take the proxy pools' connections nor show in their metrics.
    this.#agent = new Agent({ connect: { timeout: settings.timeoutMs }, keepAliveTimeout: 1000 });
  }

  /** The first round now, then one each interval after the previous round ended (rounds never overlap). */
  start(): void {
    this.#schedule(0);
  }

  /**
   * A deployment just registered or changed: probe it before the next round. Through the same lanes as a round
   * and never twice at once, since any owner may change a deployment as often as they like.
   */
  probeSoon(id: string): void {
    const row = this.#closed ? undefined : this.store.get(id);
    if (!row) return;
    void this.#ask(row);
    this.#pump();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    for (const { end } of this.#waiting.values()) end();
    this.#waiting.clear();
    await Promise.all(this.#running.values());
    await this.#agent.destroy();
  }

  #schedule(delayMs: number): void {
    this.#timer = setTimeout(() => {
      this.#round()
        .catch((error: unknown) => this.logger.warn({ err: error }, 'upstream health: round failed; trying again'))
        .finally(() => {
          if (!this.#closed) this.#schedule(this.settings.intervalMs);
        });
    }, delayMs);
    // Probing alone never keeps a process alive.
    this.#timer.unref();
  }

  /** Every deployment; ends once each has been probed (not when the queue is empty, which changes may put off). */
  async #round(): Promise<void> {
    const probed = this.store.list().map((row) => this.#ask(row));
    this.#pump();
    await Promise.all(probed);
  }

  /** Queues the row unless it is waiting or in flight already; settles when that probe of it ends. */
  #ask(row: DeploymentRow): Promise<void> {
    const running = this.#running.get(row.id);
    if (running) return running;
    let entry = this.#waiting.get(row.id);
    if (!entry) {
      const { promise: ended, resolve: end } = Promise.withResolvers<void>();
      entry = { row, ended, end };
      this.#waiting.set(row.id, entry);
    }
    return entry.ended;
  }

  /** Starts what the free lanes take, first asked first. */
  #pump(): void {
    for (const { row, end } of this.#waiting.values()) {
      if (this.#running.size >= this.settings.concurrency) break;
      this.#waiting.delete(row.id);
      const probe = this.#probeAndRecord(row).finally(() => {
        this.#running.delete(row.id);
        end();
        this.#pump();
      });
      this.#running.set(row.id, probe);
    }
  }

  async #probeAndRecord(row: DeploymentRow): Promise<void> {
    const { timeoutMs } = this.settings;
    const replicas = replicasOf(row);
    const results = await Promise.all(
      replicas.map(({ url }) => {
        // An h2c replica speaks no HTTP/1.1 for a health path to answer: a TCP connect probes it.
        const h2c = url.startsWith('h2c:');
        const probe =
          row.healthPath === null || h2c
            ? tcpProbe(new URL(url.replace(/^h2c:/, 'http:')), timeoutMs)
            : httpProbe(`${url}${row.healthPath}`, timeoutMs, this.#agent);
        return probe.catch((error: Error) => failed(error));
      }),
    );
    if (this.#closed) return;
    const checkedAt = this.now().toISOString();
    try {
      const before = new Map(this.store.replicaHealth(row.id).map((r) => [r.replica, r]));
      const judged = replicas.map(({ url }, i) =>
        this.#judge(row.id, url, results[i] as ProbeResult, before.get(url), checkedAt),
      );
      const summary = results.find((r) => r.healthy) ?? (results[0] as ProbeResult);
      this.store.recordHealth({ deploymentId: row.id, ...summary, checkedAt }, judged);
    } catch (error) {
      this.logger.warn({ err: error, deployment: row.id }, 'upstream health: result not written');
    }
  }

  /** A replica's verdict: ejected after `unhealthyThreshold` failures in a row, admitted after `healthyThreshold`. */
  #judge(
    deploymentId: string,
    replica: string,
    result: ProbeResult,
    before: ReplicaHealthRow | undefined,
    checkedAt: string,
  ): ReplicaHealthRow {
    const streak = before && before.healthy === result.healthy ? before.streak + 1 : 1;
    const { unhealthyThreshold, healthyThreshold } = this.settings;
    let ejected = before?.ejected ?? false;
    if (!result.healthy && streak >= unhealthyThreshold) ejected = true;
    if (result.healthy && streak >= healthyThreshold) ejected = false;
    if (ejected !== (before?.ejected ?? false))
      this.logger.warn(
        { deployment: deploymentId, replica, reason: result.reason, detail: result.detail },
        ejected ? 'upstream replica ejected: its probes failed' : 'upstream replica admitted again: its probes pass',
      );
    return { deploymentId, replica, ...result, ejected, streak, checkedAt };
  }
}
