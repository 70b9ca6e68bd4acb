/**
 * startGateway(config), in named steps: storage and TLS material → the
 * domains → the compiled routing tables → the listeners. The HTTPS listener
 * speaks HTTP/2 with HTTP/1.1 fallback; an optional plain-HTTP listener
 * serves local development. Every listener is built by app/listeners.ts.
 */
import type { Server as HttpServer } from 'node:http';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';
import { DOMAIN_MODULES } from '../domains/index.ts';
import type { Config } from '../gateway/config/schema.ts';
import { secureDataDir } from '../gateway/db/storage.ts';
import { buildErrorRegistry } from '../gateway/errors/registry.ts';
import { createPlainHttpListener } from '../gateway/http/listeners.ts';
import { deriveOrigin, hostForUrl } from '../gateway/http/origin.ts';
import { createUpgradeListener } from '../gateway/http/upgrade.ts';
import { createLoggers } from '../gateway/log.ts';
import { MESH_DIRECTORY } from '../gateway/mesh/directory.ts';
import { createMeshVerifyStage } from '../gateway/mesh/verify.ts';
import type { GatewayDeps, HandlerInstance, ListenerFactory } from '../gateway/module.ts';
import { createRouteMatchStage } from '../gateway/pipeline/stages/route-match.ts';
import { AUTHENTICATOR } from '../gateway/principal.ts';
import { buildServiceTable, compileHandlers } from '../gateway/routing/compile.ts';
import { compileRpc } from '../gateway/routing/rpc.ts';
import type { ServiceTable } from '../gateway/routing/service-table.ts';
import { ROUTING_SOURCE } from '../gateway/routing/source.ts';
import { ensureTlsMaterial, type TlsMaterial } from '../gateway/tls/material.ts';
import { type DomainDeps, type Domains, ERROR_TABLES, initDomains } from './domains.ts';
import { closeGracefully, createIngressPipeline, createListenerFactory, type IngressBase, type Listening, listen, trackSockets } from './listeners.ts';

export interface GatewayOptions {
  logDestination?: DestinationStream;
  announce?: (line: string) => void;
  now?: () => Date;
}

export interface Gateway {
  readonly httpsUrl: string;
  readonly httpUrl: string | null;
  readonly origin: string;
  readonly caPem: string;
  readonly deps: GatewayDeps;
  close(graceMs?: number): Promise<void>;
}

export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  buildErrorRegistry(ERROR_TABLES);
  const logs = createLoggers(config.logLevel, options.logDestination);
  const tls = await prepareStorage(config, logs.logger);
  const ingress: IngressBase = { config, accessLog: logs.accessLog, tls };
  const listeners = createListenerFactory(ingress);
  // The origin depends on the bound port (0 = any); domains read it only at request time.
  const urls = { origin: config.origin?.replace(/\/$/, '') ?? '', externalUrl: config.externalUrl?.replace(/\/$/, '') ?? '' };
  const base: DomainDeps = {
    config,
    purpose: 'serve',
    listeners,
    runtime: { origin: () => urls.origin, externalUrl: () => urls.externalUrl, caPem: () => tls.caPem },
    now: options.now ?? (() => new Date()),
    announce: options.announce ?? ((line) => process.stdout.write(`${line}\n`)),
  };
  const domains = await initDomains(DOMAIN_MODULES, base, logs);
  const table = compileRouting(domains);
  const listening = await openListeners(domains, { ingress, listeners }, table).catch(async (error: unknown) => {
    await domains.close();
    throw error;
  });
  urls.origin ||= deriveOrigin(config, listening.httpsPort);
  urls.externalUrl ||= urls.origin;
  const httpsUrl = `https://${hostForUrl(config.bind)}:${listening.httpsPort}`;
  const httpUrl = listening.httpPort === null ? null : `http://${hostForUrl(config.bind)}:${listening.httpPort}`;
  domains.deps.logger.info({ https: httpsUrl, http: httpUrl, origin: urls.origin, cluster: config.clusterName }, 'listening');
  domains.deps.logger.flush(); // whoever waits for this line need not wait for the next periodic flush
  return {
    httpsUrl,
    httpUrl,
    origin: urls.origin,
    caPem: tls.caPem,
    deps: domains.deps,
    async close(graceMs = 5000) {
      await closeGracefully(listening.listeners, graceMs);
      await domains.close();
    },
  };
}

/** The data dir locked down, and the TLS material for every name the gateway answers to. */
async function prepareStorage(config: Readonly<Config>, logger: GatewayDeps['logger']): Promise<TlsMaterial> {
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

/** The domains' routes compiled once; the service table is swapped whole when the routing configuration changes. */
function compileRouting({ deps, instances }: Domains): () => ServiceTable {
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

interface OpenListeners {
  readonly listeners: readonly Listening[];
  readonly httpsPort: number;
  readonly httpPort: number | null;
}

/** Binds the HTTPS listener and, when configured, the plain-HTTP one; one that cannot bind closes what was opened. */
async function openListeners(
  { deps, instances }: Domains,
  { ingress, listeners: factory }: { ingress: IngressBase; listeners: ListenerFactory },
  table: () => ServiceTable,
): Promise<OpenListeners> {
  const { config, logger } = deps;
  const options = { stages: [createRouteMatchStage(table, compileRpc(instances))], logger };
  const main = factory.https(options);
  const onUpgrade = createUpgradeListener(table, upgradeHandlers(instances), logger);
  main.server.on('upgrade', onUpgrade);
  const listeners: Listening[] = [main];
  try {
    const httpsPort = await listen(main.server, config.httpsPort, config.bind);
    if (config.httpPort === null) return { listeners, httpsPort, httpPort: null };
    const server: HttpServer = createPlainHttpListener(config.limits, createIngressPipeline(ingress, options));
    server.on('upgrade', onUpgrade);
    listeners.push({ server, sockets: trackSockets(server) });
    return { listeners, httpsPort, httpPort: await listen(server, config.httpPort, config.bind) };
  } catch (error) {
    for (const { server } of listeners) server.close();
    throw error;
  }
}

function upgradeHandlers(instances: readonly HandlerInstance[]) {
  return new Map(instances.flatMap((i) => i.mounts ?? []).flatMap((m) => (m.upgrade ? [[m.service, m.upgrade] as const] : [])));
}
