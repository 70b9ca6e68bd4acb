/**
 * startGateway(config), in named steps: storage and TLS material → the
 * listeners bound (requests held) → the domains → the compiled routing
 * tables → requests let through. The HTTPS listener speaks HTTP/2 with
 * HTTP/1.1 fallback; an optional plain-HTTP listener serves local
 * development; the optional admin listener serves metrics (app/admin.ts).
 * Every public listener is built by app/listeners.ts.
 */
import { join } from 'node:path';
import type { DestinationStream, Logger } from 'pino';
import { DOMAIN_MODULES } from '../domains/index.ts';
import type { Config } from '../gateway/config/schema.ts';
import { holdServeLock, type ServeLock } from '../gateway/db/serve-lock.ts';
import { secureDataDir } from '../gateway/db/storage.ts';
import { buildErrorRegistry, type RegistryEntry } from '../gateway/errors/registry.ts';
import { FoldedWarnings } from '../gateway/folded-warnings.ts';
import { deriveOrigin, urlOf } from '../gateway/http/origin.ts';
import { createLoggers } from '../gateway/log.ts';
import type { GatewayDeps, HandlerInstance, RouteDef } from '../gateway/module.ts';
import { createMetrics, type GatewayMetrics } from '../gateway/observability/metrics.ts';
import { createRequestObserver } from '../gateway/observability/request.ts';
import { createTracing } from '../gateway/observability/tracing.ts';
import { buildRequestPlan, type RequestPlan } from '../gateway/pipeline/plan.ts';
import type { Entry } from '../gateway/pipeline/run.ts';
import { type ProcessPlace, SINGLE_PROCESS } from '../gateway/process/link.ts';
import { buildServiceTable, compileHandlers } from '../gateway/routing/compile.ts';
import { compileRpc } from '../gateway/routing/rpc.ts';
import type { ServiceTable } from '../gateway/routing/service-table.ts';
import { ROUTING_SOURCE } from '../gateway/routing/source.ts';
import { ensureTlsMaterial, type TlsMaterial } from '../gateway/tls/material.ts';
import { ServingCertificate } from '../gateway/tls/serving-certificate.ts';
import { type AdminListener, startAdminListener } from './admin.ts';
import { apiDocumentInstance } from './api-document.ts';
import { type JoinedIdentity, joinClusterIdentity } from './cluster-identity.ts';
import { type DomainDeps, type Domains, ERROR_TABLES, initDomains } from './domains.ts';
import {
  closeGracefully,
  createListenerFactory,
  Deferred,
  httpsListening,
  type IngressBase,
  type Listening,
  listen,
  plainListening,
} from './listeners.ts';
import { initialPair, type RunningSources, startCertificateSources } from './public-certificate.ts';
import { shareWorkerMetrics } from './worker-metrics.ts';

export interface GatewayOptions {
  logDestination?: DestinationStream;
  announce?: (line: string) => void;
  now?: () => Date;
  /** Where this process stands (default: one process does everything); a primary binds no main listener. */
  process?: ProcessPlace;
}

export interface Gateway {
  readonly httpsUrl: string;
  readonly httpUrl: string | null;
  /** The admin listener (`/metrics`), when `admin.port` is set. */
  readonly adminUrl: string | null;
  readonly origin: string;
  readonly caPem: string;
  readonly deps: GatewayDeps;
  /** Every API route served, the API document's own included. */
  readonly apiRoutes: readonly RouteDef[];
  /** A primary's workers serve the ports: ACME may order (a single process does so once listening). */
  workersServing(): void;
  /** Stops gracefully; `reason` (e.g. the signal) goes into the final `stopped` log line. */
  close(graceMs?: number, reason?: string): Promise<void>;
}

/**
 * Starts a gateway; on PostgreSQL inside the cluster identity (app/cluster-identity.ts): this node takes the
 * cluster's CA, keys and certificates before anything reads them, and publishes what its start created.
 */
export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  // The ACME folder is the owner's: a worker never writes it (it gets certificates over the owner link).
  const identity = await joinClusterIdentity(config, { acme: (options.process ?? SINGLE_PROCESS).role !== 'worker' });
  if (identity === null) return startNode(config, options, null);
  let gateway: Gateway;
  try {
    gateway = await startNode(config, options, identity);
  } catch (error) {
    identity.end(false);
    identity.close();
    throw error;
  }
  identity.end(true);
  identity.follow(gateway.deps.feed, gateway.deps.logger);
  return {
    ...gateway,
    async close(graceMs, reason) {
      await gateway.close(graceMs, reason);
      identity.close();
    },
  };
}

async function startNode(
  config: Readonly<Config>,
  options: GatewayOptions,
  identity: JoinedIdentity | null,
): Promise<Gateway> {
  const registry = buildErrorRegistry(ERROR_TABLES);
  const logs = createLoggers(config.logLevel, options.logDestination);
  const { tls, lock } = await prepareStorage(config, logs.logger).catch((error: unknown) => {
    logs.close();
    throw error;
  });
  const place = options.process ?? SINGLE_PROCESS;
  const metrics = createMetrics({ databaseGauges: place.role !== 'worker' });
  const tracing = await createTracing(config, { metrics, logger: logs.logger });
  const observer = createRequestObserver(metrics, tracing);
  const certificate = new ServingCertificate(initialPair(config, tls));
  const ingress: IngressBase = {
    config,
    accessLog: logs.accessLog,
    tls: certificate,
    observer,
    warnings: new FoldedWarnings(),
  };
  const bound = await bindForRole(ingress, place).catch((error: unknown) => {
    lock.release();
    logs.close();
    throw error;
  });
  let admin: AdminListener | null = null;
  try {
    admin = await startAdminForRole(config, place, metrics, logs.logger);
  } catch (error) {
    bound.stop();
    lock.release();
    logs.close();
    throw error;
  }
  const origin = deriveOrigin(config, bound.httpsPort);
  // Operator lines (the bootstrap admin's password) are held until start has succeeded.
  const print = options.announce ?? ((line: string) => process.stdout.write(`${line}\n`));
  const held: string[] = [];
  let announced = false;
  const listenerFactory = createListenerFactory(ingress);
  const base: DomainDeps = {
    config,
    purpose: 'serve',
    metrics,
    tracing,
    listeners: listenerFactory,
    process: place,
    runtime: {
      origin: () => origin,
      externalUrl: () => config.externalUrl?.replace(/\/$/, '') || origin,
      caPem: () => tls.caPem,
      serverCertPem: () => certificate.current.certPem,
    },
    now: options.now ?? (() => new Date()),
    announce: (line) => (announced ? print(line) : held.push(line)),
  };
  let domains: Domains | null = null;
  let served: Domains | null = null;
  let sources: RunningSources | null = null;
  try {
    const sourceDeps = { config, certificate, place, logger: logs.logger, metrics, origin: () => origin };
    sources = await startCertificateSources(identity ? { ...sourceDeps, cluster: identity.acme() } : sourceDeps);
    domains = await initDomains(DOMAIN_MODULES, base, logs);
    sources.follow(domains.deps.feed);
    served = withApiDocument(domains, registry);
    // A worker's access lines name it, so an operator can tell which process served a request.
    const plan = planRequests(served.deps, ingress);
    letRequestsThrough(served, plan, bound, place.role === 'worker' ? { worker: process.pid } : undefined);
    listenerFactory.ready(plan);
  } catch (error) {
    bound.stop();
    await sources?.stop();
    await admin?.close();
    await domains?.close();
    lock.release();
    logs.close();
    // A domain that failed after the bootstrap admin was created: its password is shown now, with the failure,
    // rather than never — the row stays, and the next start (once the cause is fixed) will not print it again.
    for (const line of held) print(line);
    throw error;
  }
  const running = domains;
  const certificateSources = sources as RunningSources;
  if (place.role === 'single') certificateSources.serving();
  const httpsUrl = urlOf('https', config.bind, bound.httpsPort);
  const httpUrl = bound.httpPort === null ? null : urlOf('http', config.bind, bound.httpPort);
  const adminUrl = admin?.url ?? null;
  const started = place.role === 'primary' ? 'primary started; its workers will listen' : 'listening';
  logs.logger.info(
    { https: httpsUrl, http: httpUrl, admin: adminUrl, origin, cluster: config.clusterName, role: place.role },
    started,
  );
  logs.logger.flush(); // whoever waits for this line need not wait for the next periodic flush
  announced = true;
  for (const line of held.splice(0)) print(line);
  return {
    httpsUrl,
    httpUrl,
    adminUrl,
    origin,
    caPem: tls.caPem,
    deps: running.deps,
    apiRoutes: served.instances.flatMap((i) => i.routes ?? []),
    workersServing: () => certificateSources.serving(),
    async close(graceMs = 5000, reason = 'closed') {
      await closeGracefully(bound.listeners, graceMs);
      await certificateSources.stop();
      ingress.warnings.close();
      await running.close();
      await admin?.close();
      // The spans of the last requests are exported before the process goes.
      await tracing.close().catch((error: unknown) => logs.logger.warn({ err: String(error) }, 'span export failed'));
      lock.release();
      logs.logger.info({ reason }, 'stopped');
      logs.close();
    },
  };
}

/**
 * The data dir locked down and held (the serve lock: one gateway per data dir, and a restore can see it is in use),
 * and the TLS material for every name the gateway answers to.
 */
type Storage = { tls: TlsMaterial; lock: ServeLock };

async function prepareStorage(config: Readonly<Config>, logger: Logger): Promise<Storage> {
  secureDataDir(config.dataDir, logger, config.secrets.kekDir === null ? [] : [config.secrets.kekDir]);
  const lock = holdServeLock(config.dataDir);
  const names = [...config.hostnames, config.bind, '127.0.0.1', '::1', 'localhost'].filter(
    (n) => n !== '0.0.0.0' && n !== '::',
  );
  const tls = await ensureTlsMaterial({
    tlsDir: join(config.dataDir, 'tls'),
    names,
    clusterName: config.clusterName,
    operatorCertFile: config.tlsCertFile,
    operatorKeyFile: config.tlsKeyFile,
    warn: (message) => logger.warn(message),
  }).catch((error: unknown) => {
    lock.release();
    throw error;
  });
  return { tls, lock };
}

interface BoundListeners {
  readonly listeners: readonly Listening[];
  readonly httpsPort: number;
  readonly httpPort: number | null;
  /** Requests and upgrades that arrive before the domains are up wait here. */
  readonly requests: Deferred<Parameters<Entry['request']>>;
  readonly upgrades: Deferred<Parameters<Entry['upgrade']>>;
  stop(): void;
}

/**
 * The listeners bind before any domain starts: a taken port must stop start before the auth domain creates the
 * bootstrap admin, whose generated password exists only in the line announcing it.
 */
async function bindListeners(ingress: IngressBase, reusePort: boolean): Promise<BoundListeners> {
  const { config } = ingress;
  const requests = new Deferred<Parameters<Entry['request']>>();
  const upgrades = new Deferred<Parameters<Entry['upgrade']>>();
  const https = httpsListening(ingress, requests.listener);
  const plain = config.httpPort === null ? null : plainListening(ingress, requests.listener);
  const listeners = plain ? [https, plain] : [https];
  for (const { server } of listeners) server.on('upgrade', upgrades.listener);
  const stop = () => {
    for (const { server, sockets } of listeners) {
      server.close();
      for (const socket of sockets) socket.destroy();
    }
  };
  try {
    const httpsPort = await listen(https.server, config.httpsPort, config.bind, reusePort);
    const httpPort = plain ? await listen(plain.server, config.httpPort as number, config.bind, reusePort) : null;
    return { listeners, httpsPort, httpPort, requests, upgrades, stop };
  } catch (error) {
    stop();
    throw error;
  }
}

/** A primary's stand-in: no listener, the configured ports, requests never arrive. */
function unbound(config: Readonly<Config>): BoundListeners {
  const never = () => {};
  return {
    listeners: [],
    httpsPort: config.httpsPort,
    httpPort: config.httpPort,
    requests: new Deferred(),
    upgrades: new Deferred(),
    stop: never,
  };
}

/** The primary's workers bind the ports; it knows them from the configuration, which it resolved beforehand. */
function bindForRole(ingress: IngressBase, place: ProcessPlace): Promise<BoundListeners> {
  if (place.role === 'primary') return Promise.resolve(unbound(ingress.config));
  return bindListeners(ingress, place.role === 'worker' && ingress.config.workerListen === 'reuseport');
}

/**
 * One process binds the admin port: the primary under workers (its jobs and ports are the once-only state), a
 * single process otherwise. A worker answers the primary's scrapes instead.
 */
function startAdminForRole(
  config: Readonly<Config>,
  place: ProcessPlace,
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<AdminListener | null> {
  if (place.role === 'worker') {
    shareWorkerMetrics(config, place, metrics);
    return Promise.resolve(null);
  }
  return startAdminListener(config, place, metrics, logger);
}

/** The domains' instances and the API document of their routes, served beside them. */
function withApiDocument(domains: Domains, registry: ReadonlyMap<string, RegistryEntry>): Domains {
  const document = apiDocumentInstance(
    domains.instances,
    registry,
    domains.deps.services.get(ROUTING_SOURCE),
    domains.deps.process,
  );
  return { ...domains, instances: [...domains.instances, document] };
}

/** The gateway's request plan: every chain of every listener is built from it (gateway/pipeline/plan.ts). */
function planRequests(deps: GatewayDeps, ingress: IngressBase): RequestPlan {
  return buildRequestPlan({
    config: deps.config,
    services: deps.services,
    sql: deps.sql,
    metrics: deps.metrics,
    accessLog: ingress.accessLog,
    observer: ingress.observer,
    warnings: ingress.warnings,
    origin: deps.runtime.origin,
    now: deps.now,
  });
}

/** The domains' routes compiled once into the main listeners' entry; held requests and upgrades then run through it. */
function letRequestsThrough(
  { deps, instances }: Domains,
  plan: RequestPlan,
  bound: BoundListeners,
  accessFields?: Readonly<Record<string, number>>,
): void {
  const routes = compileRouting(deps, instances, plan);
  const entry = plan.listener({ routes, rpc: compileRpc(instances, plan), accessFields }, deps.logger);
  bound.requests.open(entry.request);
  bound.upgrades.open(entry.upgrade);
}

/** The service table is swapped whole when the routing configuration changes. */
function compileRouting(deps: GatewayDeps, instances: readonly HandlerInstance[], plan: RequestPlan) {
  const compiled = compileHandlers(instances, plan);
  const routing = deps.services.get(ROUTING_SOURCE);
  let table = buildServiceTable(routing.current(), compiled);
  routing.subscribe((snapshot) => {
    table = buildServiceTable(snapshot, compiled);
  });
  return (): ServiceTable => table;
}
