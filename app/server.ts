/**
 * createGateway(config): TLS material → database → domains → compiled
 * tables → listeners. The HTTPS listener speaks HTTP/2 with HTTP/1.1
 * fallback (DESIGN.md §3 item 7, gRPC later); an optional plain-HTTP
 * listener serves local development.
 */
import type { Server as HttpServer } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import type { DestinationStream, Logger } from 'pino';
import { HANDLER_MODULES } from '../domains/index.ts';
import type { Config } from '../gateway/config/schema.ts';
import { openDatabase } from '../gateway/db/open.ts';
import { DATABASE_FILE, secureDataDir } from '../gateway/db/storage.ts';
import type { ErrorTable } from '../gateway/errors/api-error.ts';
import { GatewayErrors } from '../gateway/errors/gateway-errors.ts';
import { buildErrorRegistry } from '../gateway/errors/registry.ts';
import { createHttpsListener, createPlainHttpListener } from '../gateway/http/listeners.ts';
import { createUpgradeListener } from '../gateway/http/upgrade.ts';
import { createLoggers } from '../gateway/log.ts';
import { guardMeshBody } from '../gateway/mesh/body-guard.ts';
import { MESH_DIRECTORY } from '../gateway/mesh/directory.ts';
import { MeshErrors } from '../gateway/mesh/errors.ts';
import { createMeshVerifyStage } from '../gateway/mesh/verify.ts';
import type { GatewayDeps, HandlerInstance } from '../gateway/module.ts';
import { createPipeline } from '../gateway/pipeline/run.ts';
import { createAccessLogStage } from '../gateway/pipeline/stages/access-log.ts';
import { AUTHENTICATOR } from '../gateway/pipeline/stages/authenticate.ts';
import { createCanonicalPathStage } from '../gateway/pipeline/stages/canonical-path.ts';
import { createLimitsStage } from '../gateway/pipeline/stages/limits.ts';
import { createRequestIdStage } from '../gateway/pipeline/stages/request-id.ts';
import { createRouteMatchStage } from '../gateway/pipeline/stages/route-match.ts';
import { buildServiceTable, compileHandlers } from '../gateway/routing/compile.ts';
import { compileRpc } from '../gateway/routing/rpc.ts';
import { ROUTING_SOURCE, type ServiceTable } from '../gateway/routing/service-table.ts';
import { ServiceRegistry } from '../gateway/services.ts';
import { ensureTlsMaterial } from '../gateway/tls/material.ts';

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

/** Every error table: the gateway's own plus each domain's (ERRORS.md mirrors this). */
export const ERROR_TABLES: readonly ErrorTable[] = [
  ...new Set([
    GatewayErrors,
    MeshErrors,
    ...HANDLER_MODULES.flatMap((m) => (m.errors === undefined ? [] : Array.isArray(m.errors) ? m.errors : [m.errors as ErrorTable])),
  ]),
];

export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  buildErrorRegistry(ERROR_TABLES);
  const logs = createLoggers(config.logLevel, options.logDestination);
  const { logger, accessLog } = logs;
  secureDataDir(config.dataDir, logger, config.secrets.kekDir === null ? [] : [config.secrets.kekDir]);
  const names = [...config.hostnames, config.bind, '127.0.0.1', '::1', 'localhost'].filter((n) => n !== '0.0.0.0' && n !== '::');
  const tls = await ensureTlsMaterial({
    tlsDir: join(config.dataDir, 'tls'),
    names,
    clusterName: config.clusterName,
    operatorCertFile: config.tlsCertFile,
    operatorKeyFile: config.tlsKeyFile,
  });

  const { sqlite, db } = openDatabase(join(config.dataDir, DATABASE_FILE));
  // The origin depends on the bound port (0 = any); domains read it only at request time.
  let origin = config.origin?.replace(/\/$/, '') ?? '';
  let externalUrl = config.externalUrl?.replace(/\/$/, '') ?? '';
  const deps: GatewayDeps = {
    config,
    db,
    sqlite,
    logger,
    accessLog,
    services: new ServiceRegistry(),
    runtime: { origin: () => origin, externalUrl: () => externalUrl, caPem: () => tls.caPem, serverTls: () => tls },
    now: options.now ?? (() => new Date()),
    announce: options.announce ?? ((line) => process.stdout.write(`${line}\n`)),
  };
  const instances: HandlerInstance[] = [];
  try {
    for (const module of HANDLER_MODULES) instances.push(await module.init(deps));
  } catch (error) {
    await closeAll(instances, logger);
    sqlite.close();
    logs.close();
    throw error;
  }

  const mesh = deps.services.find(MESH_DIRECTORY);
  const compiled = compileHandlers(instances, {
    authenticator: deps.services.get(AUTHENTICATOR),
    sharedRealmAuthenticator: mesh?.egressAuthenticator,
    meshVerify: mesh ? createMeshVerifyStage({ directory: mesh, mesh: config.mesh, now: deps.now }) : undefined,
  });
  const routing = deps.services.get(ROUTING_SOURCE);
  let table: ServiceTable = buildServiceTable(routing.current(), compiled);
  routing.subscribe((snapshot) => {
    table = buildServiceTable(snapshot, compiled);
  });
  const handle = createPipeline(
    [
      createRequestIdStage(),
      createAccessLogStage(accessLog),
      createLimitsStage(config.limits),
      createCanonicalPathStage(),
      createRouteMatchStage(() => table, compileRpc(instances)),
    ],
    logger,
    guardMeshBody,
  );
  const server = createHttpsListener(tls, config.limits, handle);
  const upgrades = new Map(instances.flatMap((i) => i.mounts ?? []).flatMap((m) => (m.upgrade ? [[m.service, m.upgrade] as const] : [])));
  const onUpgrade = createUpgradeListener(() => table, upgrades, logger);
  server.on('upgrade', onUpgrade);
  const sockets = trackSockets(server);
  // A listener that cannot bind stops start with nothing left open (domains, database, the other listener).
  const abort = async (error: unknown): Promise<never> => {
    server.close();
    await closeAll(instances, logger);
    sqlite.close();
    logs.close();
    throw error;
  };
  const httpsPort = await listen(server, config.httpsPort, config.bind).catch(abort);
  origin ||= deriveOrigin(config.hostnames[0] as string, httpsPort);
  externalUrl ||= origin;
  let httpServer: HttpServer | null = null;
  let httpUrl: string | null = null;
  if (config.httpPort !== null) {
    httpServer = createPlainHttpListener(config.limits, handle);
    httpServer.on('upgrade', onUpgrade);
    trackSockets(httpServer, sockets);
    httpUrl = `http://${hostForUrl(config.bind)}:${await listen(httpServer, config.httpPort, config.bind).catch(abort)}`;
  }
  const httpsUrl = `https://${hostForUrl(config.bind)}:${httpsPort}`;
  logger.info({ https: httpsUrl, http: httpUrl, origin, cluster: config.clusterName }, 'listening');
  logger.flush(); // whoever waits for this line need not wait for the next periodic flush

  return {
    httpsUrl,
    httpUrl,
    origin,
    caPem: tls.caPem,
    deps,
    async close(graceMs = 5000) {
      const closing = [closeServer(server), httpServer ? closeServer(httpServer) : Promise.resolve()];
      for (const socket of sockets) if (!hasInflight(socket)) socket.destroy();
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      await Promise.all(closing);
      clearTimeout(timer);
      await closeAll(instances, logger);
      sqlite.close();
      logs.close();
    },
  };
}

function deriveOrigin(host: string, port: number): string {
  return `https://${hostForUrl(host)}${port === 443 ? '' : `:${port}`}`;
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** Binds; a taken or forbidden address becomes one clear line for the operator, not a raw errno. */
function listen(server: HttpServer | Http2SecureServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      const why = error.code === 'EADDRINUSE' ? 'the address is already in use' : error.code === 'EACCES' ? 'permission denied' : error.message;
      reject(new Error(`cannot listen on ${hostForUrl(host)}:${port}: ${why}`, { cause: error }));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

type Tracked = Socket & { _meshgateInflight?: number };

function trackSockets(server: HttpServer | Http2SecureServer, sockets = new Set<Tracked>()): Set<Tracked> {
  const event = 'setSecureContext' in server ? 'secureConnection' : 'connection';
  server.on(event, (socket: Tracked) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('request', (req: { socket: Tracked }, res: { once(e: string, f: () => void): void }) => {
    const socket = req.socket;
    socket._meshgateInflight = (socket._meshgateInflight ?? 0) + 1;
    res.once('close', () => {
      socket._meshgateInflight = (socket._meshgateInflight ?? 1) - 1;
    });
  });
  return sockets;
}

function hasInflight(socket: Tracked): boolean {
  return (socket._meshgateInflight ?? 0) > 0;
}

function closeServer(server: HttpServer | Http2SecureServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

async function closeAll(instances: HandlerInstance[], logger: Logger): Promise<void> {
  for (const instance of [...instances].reverse()) {
    try {
      await instance.close?.();
    } catch (error) {
      logger.warn({ err: error }, 'domain close failed');
    }
  }
}
