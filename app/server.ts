/**
 * startGateway(config), in named steps: storage and TLS material → the
 * listeners bound (requests held) → the domains → the compiled routing
 * tables → requests let through. The HTTPS listener speaks HTTP/2 with
 * HTTP/1.1 fallback; an optional plain-HTTP listener serves local
 * development. Every listener is built by app/listeners.ts.
 */
import { join } from 'node:path';
import type { DestinationStream, Logger } from 'pino';
import { DOMAIN_MODULES } from '../domains/index.ts';
import type { Config } from '../gateway/config/schema.ts';
import { secureDataDir } from '../gateway/db/storage.ts';
import { buildErrorRegistry } from '../gateway/errors/registry.ts';
import { deriveOrigin, hostForUrl } from '../gateway/http/origin.ts';
import { createUpgradeListener } from '../gateway/http/upgrade.ts';
import { createLoggers } from '../gateway/log.ts';
import { MESH_DIRECTORY } from '../gateway/mesh/directory.ts';
import { createMeshVerifyStage } from '../gateway/mesh/verify.ts';
import type { GatewayDeps, HandlerInstance } from '../gateway/module.ts';
import type { createPipeline } from '../gateway/pipeline/run.ts';
import { createRouteMatchStage } from '../gateway/pipeline/stages/route-match.ts';
import { AUTHENTICATOR } from '../gateway/principal.ts';
import { type ProcessPlace, SINGLE_PROCESS } from '../gateway/process/link.ts';
import { buildServiceTable, compileHandlers } from '../gateway/routing/compile.ts';
import { compileRpc } from '../gateway/routing/rpc.ts';
import type { ServiceTable } from '../gateway/routing/service-table.ts';
import { ROUTING_SOURCE } from '../gateway/routing/source.ts';
import { ensureTlsMaterial, type TlsMaterial } from '../gateway/tls/material.ts';
import { type DomainDeps, type Domains, ERROR_TABLES, initDomains } from './domains.ts';
import {
  closeGracefully,
  createIngressPipeline,
  createListenerFactory,
  Deferred,
  httpsListening,
  type IngressBase,
  type Listening,
  listen,
  plainListening,
} from './listeners.ts';

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
  readonly origin: string;
  readonly caPem: string;
  readonly deps: GatewayDeps;
  /** Stops gracefully; `reason` (e.g. the signal) goes into the final `stopped` log line. */
  close(graceMs?: number, reason?: string): Promise<void>;
}

export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  buildErrorRegistry(ERROR_TABLES);
  const logs = createLoggers(config.logLevel, options.logDestination);
  const tls = await prepareStorage(config, logs.logger);
  const ingress: IngressBase = { config, accessLog: logs.accessLog, tls };
  const place = options.process ?? SINGLE_PROCESS;
  // The primary's workers bind the ports; it knows them from the configuration, which it resolved beforehand.
  const bound =
    place.role === 'primary'
      ? unbound(config)
      : await bindListeners(ingress, place.role === 'worker' && config.workerListen === 'reuseport').catch((error: unknown) => {
          logs.close();
          throw error;
        });
  const origin = deriveOrigin(config, bound.httpsPort);
  // Operator lines (the bootstrap admin's password) are held until start has succeeded.
  const print = options.announce ?? ((line: string) => process.stdout.write(`${line}\n`));
  const held: string[] = [];
  let announced = false;
  const base: DomainDeps = {
    config,
    purpose: 'serve',
    listeners: createListenerFactory(ingress),
    process: place,
    runtime: {
      origin: () => origin,
      externalUrl: () => config.externalUrl?.replace(/\/$/, '') || origin,
      caPem: () => tls.caPem,
      serverCertPem: () => tls.certPem,
    },
    now: options.now ?? (() => new Date()),
    announce: (line) => (announced ? print(line) : held.push(line)),
  };
  let domains: Domains | null = null;
  try {
    domains = await initDomains(DOMAIN_MODULES, base, logs);
    // A worker's access lines name it, so an operator can tell which process served a request.
    letRequestsThrough(domains, ingress, bound, place.role === 'worker' ? { worker: process.pid } : undefined);
  } catch (error) {
    bound.stop();
    await domains?.close();
    logs.close();
    // A domain that failed after the bootstrap admin was created: its password is shown now, with the failure,
    // rather than never — the row stays, and the next start (once the cause is fixed) will not print it again.
    for (const line of held) print(line);
    throw error;
  }
  const running = domains;
  const httpsUrl = `https://${hostForUrl(config.bind)}:${bound.httpsPort}`;
  const httpUrl = bound.httpPort === null ? null : `http://${hostForUrl(config.bind)}:${bound.httpPort}`;
  const started = place.role === 'primary' ? 'primary started; its workers will listen' : 'listening';
  logs.logger.info({ https: httpsUrl, http: httpUrl, origin, cluster: config.clusterName, role: place.role }, started);
  logs.logger.flush(); // whoever waits for this line need not wait for the next periodic flush
  announced = true;
  for (const line of held.splice(0)) print(line);
  return {
    httpsUrl,
    httpUrl,
    origin,
    caPem: tls.caPem,
    deps: running.deps,
    async close(graceMs = 5000, reason = 'closed') {
      await closeGracefully(bound.listeners, graceMs);
      await running.close();
      logs.logger.info({ reason }, 'stopped');
      logs.close();
    },
  };
}

/** The data dir locked down, and the TLS material for every name the gateway answers to. */
async function prepareStorage(config: Readonly<Config>, logger: Logger): Promise<TlsMaterial> {
  secureDataDir(config.dataDir, logger, config.secrets.kekDir === null ? [] : [config.secrets.kekDir]);
  const names = [...config.hostnames, config.bind, '127.0.0.1', '::1', 'localhost'].filter((n) => n !== '0.0.0.0' && n !== '::');
  return ensureTlsMaterial({
    tlsDir: join(config.dataDir, 'tls'),
    names,
    clusterName: config.clusterName,
    operatorCertFile: config.tlsCertFile,
    operatorKeyFile: config.tlsKeyFile,
  });
}

type Handle = ReturnType<typeof createPipeline>;
type UpgradeListener = ReturnType<typeof createUpgradeListener>;

interface BoundListeners {
  readonly listeners: readonly Listening[];
  readonly httpsPort: number;
  readonly httpPort: number | null;
  /** Requests and upgrades that arrive before the domains are up wait here. */
  readonly requests: Deferred<Parameters<Handle>>;
  readonly upgrades: Deferred<Parameters<UpgradeListener>>;
  stop(): void;
}

/**
 * The listeners bind before any domain starts: a taken port must stop start before the auth domain creates the
 * bootstrap admin, whose generated password exists only in the line announcing it.
 */
async function bindListeners(ingress: IngressBase, reusePort: boolean): Promise<BoundListeners> {
  const { config } = ingress;
  const requests = new Deferred<Parameters<Handle>>();
  const upgrades = new Deferred<Parameters<UpgradeListener>>();
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

/** The domains' routes compiled once into the one ingress pipeline; held requests then run through it. */
function letRequestsThrough({ deps, instances }: Domains, ingress: IngressBase, bound: BoundListeners, accessFields?: Readonly<Record<string, number>>): void {
  const table = compileRouting(deps, instances);
  const stages = [createRouteMatchStage(table, compileRpc(instances))];
  bound.requests.open(createIngressPipeline(ingress, { stages, logger: deps.logger, accessFields }));
  bound.upgrades.open(createUpgradeListener(table, upgradeHandlers(instances), deps.logger));
}

/** The service table is swapped whole when the routing configuration changes. */
function compileRouting(deps: GatewayDeps, instances: readonly HandlerInstance[]): () => ServiceTable {
  const mesh = deps.services.find(MESH_DIRECTORY);
  const compiled = compileHandlers(instances, {
    authenticator: deps.services.get(AUTHENTICATOR),
    sharedRealmAuthenticator: mesh?.egressAuthenticator,
    meshVerify: mesh ? createMeshVerifyStage({ directory: mesh, mesh: deps.config.mesh, now: deps.now }) : undefined,
  });
  const routing = deps.services.get(ROUTING_SOURCE);
  let table = buildServiceTable(routing.current(), compiled);
  routing.subscribe((snapshot) => {
    table = buildServiceTable(snapshot, compiled);
  });
  return () => table;
}

function upgradeHandlers(instances: readonly HandlerInstance[]) {
  return new Map(instances.flatMap((i) => i.mounts ?? []).flatMap((m) => (m.upgrade ? [[m.service, m.upgrade] as const] : [])));
}
