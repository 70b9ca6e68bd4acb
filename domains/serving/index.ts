/**
 * Serving: the deployments registry, the runtime URL proxy for
 * models, apps and tools, the frontend with login/logout, the operator
 * services (/notebooks, /admin/compute), legacy per-deployment ports (off by
 * default), and the `deploy` / `smoke` commands.
 */
import type { HandlerModule } from '../../gateway/module.ts';
import type { BoundHistogram } from '../../gateway/observability/histogram.ts';
import { REQUEST_DURATION } from '../../gateway/observability/request.ts';
import { AUTH_FAILURES } from '../../gateway/pipeline/stages/authenticate.ts';
import type { Principal } from '../../gateway/principal.ts';
import { AUTHENTICATOR } from '../../gateway/principal.ts';
import { ROUTING_SOURCE } from '../../gateway/routing/source.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { SESSION_SIGN_OUT } from '../auth/index.ts';
import { AUTHZ } from '../authz/index.ts';
import { deployCommand } from './cli.ts';
import { ServingErrors } from './errors.ts';
import { type FrontendDeps, frontendMount, operatorMount } from './frontend.ts';
import { declareHealthGauge, HealthProber } from './health.ts';
import { replicasOf } from './input.ts';
import { LegacyListeners } from './legacy.ts';
import { answerLegacyCalls, OwnedLegacyPorts } from './legacy-owned.ts';
import { OpenStreams } from './open-streams.ts';
import { DataPlanes } from './plane.ts';
import { proxyObservability } from './proxy-metrics.ts';
import { BUCKET_IDLE_MS, RateLimiter } from './rate-limit.ts';
import { servingRoutes } from './routes.ts';
import { type RuntimeDeps, runtimeMounts } from './runtime.ts';
import { MinuteSeries, SERIES_MINUTES } from './series.ts';
import { DEPLOYMENTS, DeploymentService } from './service.ts';
import { RuntimeAuth } from './session.ts';
import { smokeCommand, smokeRoute } from './smoke.ts';
import { createDeploymentStore } from './store.ts';
import { TrafficFlusher } from './traffic.ts';

/** How often open websockets and responses re-check their access: the most a lost access outlives its loss by. */
const STREAM_SWEEP_MS = 1000;

/** How often each process reads the probes' verdicts: the most a replica's ejection or return lags behind them. */
const VERDICTS_MS = 1000;

/**
 * Each second, the replicas the probes ejected (every serving process); and once a minute, by the owner of
 * background work, the rate-limit buckets idle long enough to have refilled and the minutes older than an hour.
 */
function readVerdicts(
  store: ReturnType<typeof createDeploymentStore>,
  planes: DataPlanes,
  prunes: boolean,
  logger: { warn(obj: object, msg: string): void },
): NodeJS.Timeout {
  let ticks = 0;
  const timer = setInterval(() => {
    try {
      planes.applyVerdicts(store.replicaHealth());
      if (prunes && ++ticks % 60 === 0) {
        store.pruneBuckets(Date.now() - BUCKET_IDLE_MS);
        store.pruneMinutes(Math.floor(Date.now() / 60_000) - SERIES_MINUTES);
      }
    } catch (error) {
      logger.warn({ err: error }, 'upstream health: verdicts not read; trying again');
    }
  }, VERDICTS_MS);
  timer.unref();
  return timer;
}

/** A deployment's id (service.ts makes them with randomUUID); the planes of the operator services have names. */
const DEPLOYMENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A deployment changed, here or in another process (the change feed tells every process, the writer's included):
 * deleted, its plane is retired and its request series (`meshgate_http_request_duration_seconds`, the kernel's)
 * leave the scrape — whether or not this process had a plane for it, since a redirect or a refusal admitted to it
 * counts there too; served by other replicas now, its plane is rebuilt at once rather than at its next request, so
 * the pools of origins it left are released either way.
 */
function followDeployment(
  store: ReturnType<typeof createDeploymentStore>,
  planes: DataPlanes,
  requestSeries: Pick<BoundHistogram<'deployment'>, 'remove'>,
  id: string,
): void {
  const row = store.get(id);
  if (!row) {
    requestSeries.remove('deployment', id);
    planes.retire(id);
  } else if (planes.has(id)) {
    const { maxConcurrent, queueTimeoutMs } = row;
    planes.plane({ label: row.id, replicas: replicasOf(row), maxConcurrent, queueTimeoutMs });
  }
}

/** How many deployments a caller may see (cluster capabilities). */
export const DEPLOYMENT_COUNT = createServiceKey<(principal: Principal) => number>('deployment-count');

export const servingModule: HandlerModule = {
  name: 'serving',
  errors: ServingErrors,
  commands: [deployCommand, smokeCommand],
  async init(deps) {
    const routing = deps.services.get(ROUTING_SOURCE);
    const authz = deps.services.get(AUTHZ);
    const prefixes = () => routing.current().prefixes;
    const { serving } = deps.config;
    const store = createDeploymentStore(deps.db);
    declareHealthGauge(deps.metrics, store);
    const auth = new RuntimeAuth(
      deps.services.get(AUTHENTICATOR),
      deps.runtime.origin,
      deps.config.auth.accessTokenTtlSeconds,
      deps.metrics.counter(AUTH_FAILURES),
    );
    const planes = new DataPlanes(
      {
        connections: serving.upstreamConnections,
        maxConcurrent: serving.maxConcurrentRequests,
        queueTimeoutMs: serving.queueTimeoutMs,
        outlier: {
          consecutiveFailures: serving.outlierConsecutiveFailures,
          baseEjectionMs: serving.outlierBaseEjectionMs,
          maxEjectionMs: serving.outlierMaxEjectionMs,
        },
      },
      (live) => proxyObservability(deps.metrics, deps.tracing, live),
      new MinuteSeries(() => deps.now().getTime()),
    );
    // Booted for a command, nothing listens (deps.listeners is null); a worker asks the primary, which owns the ports.
    const place = deps.process;
    const legacy =
      serving.legacyPortListeners && deps.listeners && place.role !== 'worker'
        ? new LegacyListeners({
            runtime: () => runtime,
            info: deps.runtime,
            routing: () => routing.current(),
            config: deps.config,
            logger: deps.logger,
            listeners: deps.listeners,
          })
        : null;
    if (legacy && place.role === 'primary') answerLegacyCalls(place, legacy);
    const ownedPorts =
      serving.legacyPortListeners && place.role === 'worker' ? new OwnedLegacyPorts(place, deps.runtime.origin) : null;
    const deployments = new DeploymentService(
      store,
      authz,
      { prefixes, origin: deps.runtime.origin },
      deps.now,
      legacy ?? ownedPorts,
      planes.observed.requests,
    );
    // Serving processes write their request counts; the owner of background work probes the upstreams.
    const serves = deps.purpose === 'serve';
    const traffic = serves
      ? new TrafficFlusher(planes.observed.requests, planes.series, store, deps.now, deps.logger)
      : null;
    const prober =
      serves && place.role !== 'worker'
        ? new HealthProber(
            store,
            {
              intervalMs: serving.healthIntervalMs,
              timeoutMs: serving.healthTimeoutMs,
              concurrency: serving.healthConcurrency,
              unhealthyThreshold: serving.healthUnhealthyThreshold,
              healthyThreshold: serving.healthHealthyThreshold,
            },
            deps.now,
            deps.logger,
          )
        : null;
    const requestSeries = deps.metrics.histogram(REQUEST_DURATION);
    deps.feed.subscribe('deployments', (id) => {
      deployments.forget(id);
      prober?.probeSoon(id);
      followDeployment(store, planes, requestSeries, id);
    });
    deps.feed.onReset('deployments', () => {
      deployments.forget();
      const known = new Set([...planes.labels(), ...requestSeries.valuesOf('deployment')]);
      for (const label of known) if (DEPLOYMENT_ID.test(label)) followDeployment(store, planes, requestSeries, label);
    });
    deps.services.provide(DEPLOYMENTS, deployments);
    deps.services.provide(DEPLOYMENT_COUNT, (principal) => deployments.visibleCount(principal));
    const streams = new OpenStreams(STREAM_SWEEP_MS);
    const runtime: RuntimeDeps = {
      deployments,
      auth,
      planes,
      limiter: new RateLimiter(store, () => deps.now().getTime()),
      streams,
      defaultTimeoutSeconds: serving.defaultTimeoutSeconds,
    };
    await legacy?.openAll(store.list());
    traffic?.start();
    prober?.start();
    const verdicts = serves ? readVerdicts(store, planes, place.role !== 'worker', deps.logger) : null;
    const site: FrontendDeps = {
      auth,
      signOut: deps.services.get(SESSION_SIGN_OUT),
      planes,
      streams,
      clusterName: deps.config.clusterName,
      prefixes,
      frontendUpstream: serving.frontendUpstream,
      timeoutMs: serving.defaultTimeoutSeconds * 1000,
    };
    return {
      routes: [...servingRoutes(deployments, deps.config.limits.maxBodyBytes), smokeRoute(deps.runtime)],
      mounts: [
        ...runtimeMounts(runtime),
        frontendMount(site),
        operatorMount('notebooks', serving.notebooksUpstream, false, site),
        operatorMount('admin_compute', serving.adminComputeUpstream, true, site),
      ],
      close: async () => {
        await prober?.close();
        if (verdicts) clearInterval(verdicts);
        streams.close();
        await legacy?.closeAll();
        await planes.close();
        // After the last proxied request: its count reaches the table before the database closes.
        traffic?.close();
      },
    };
  },
};
