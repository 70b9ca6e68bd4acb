/**
 * startGateway(config): TLS material → listeners bound (requests held) →
 * database → domains → compiled tables → requests let through. The HTTPS
 * listener speaks HTTP/2 with HTTP/1.1 fallback (DESIGN.md §3 item 7, gRPC
 * later); an optional plain-HTTP listener serves local development.
 */
import type { Server as HttpServer } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import type { DestinationStream, Logger } from 'pino';
import { HANDLER_MODULES } from '../handlers/index.ts';
import type { Config } from './config/schema.ts';
import { openDatabase } from './db/open.ts';
import { DATABASE_FILE, secureDataDir } from './db/storage.ts';
import type { ErrorTable } from './errors/api-error.ts';
import { GatewayErrors } from './errors/gateway-errors.ts';
import { buildErrorRegistry } from './errors/registry.ts';
import { createHttpsListener, createPlainHttpListener } from './http/listeners.ts';
import { createUpgradeListener } from './http/upgrade.ts';
import { createLoggers } from './log.ts';
import { guardMeshBody } from './mesh/body-guard.ts';
import { MESH_DIRECTORY } from './mesh/directory.ts';
import { MeshErrors } from './mesh/errors.ts';
import { createMeshVerifyStage } from './mesh/verify.ts';
import type { GatewayDeps, HandlerInstance } from './module.ts';
import { createPipeline } from './pipeline/run.ts';
import { createAccessLogStage } from './pipeline/stages/access-log.ts';
import { AUTHENTICATOR } from './pipeline/stages/authenticate.ts';
import { createCanonicalPathStage } from './pipeline/stages/canonical-path.ts';
import { createLimitsStage } from './pipeline/stages/limits.ts';
import { createRequestIdStage } from './pipeline/stages/request-id.ts';
import { createRouteMatchStage } from './pipeline/stages/route-match.ts';
import { buildServiceTable, compileHandlers } from './routing/compile.ts';
import { compileRpc } from './routing/rpc.ts';
import { ROUTING_SOURCE, type ServiceTable } from './routing/service-table.ts';
import { ServiceRegistry } from './services.ts';
import { ensureTlsMaterial } from './tls/material.ts';

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
  /** Stops gracefully; `reason` (e.g. the signal) goes into the final `stopped` log line. */
  close(graceMs?: number, reason?: string): Promise<void>;
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

  // The listeners bind before any domain starts: a taken port must stop start before the auth domain creates the
  // bootstrap admin, whose generated password exists only in the line announcing it. Requests and upgrades that
  // arrive while the domains start wait for the pipeline.
  const requests = new Deferred<Parameters<Handle>>();
  const upgrades = new Deferred<Parameters<UpgradeListener>>();
  const server = createHttpsListener(tls, config.limits, requests.listener);
  const httpServer = config.httpPort === null ? null : createPlainHttpListener(config.limits, requests.listener);
  const listeners = httpServer ? [server, httpServer] : [server];
  const sockets = new Set<Tracked>();
  for (const listener of listeners) {
    listener.on('upgrade', upgrades.listener);
    trackSockets(listener, sockets);
  }
  const stopListening = () => {
    for (const listener of listeners) listener.close();
    for (const socket of sockets) socket.destroy();
  };
  let httpsPort: number;
  let httpUrl: string | null = null;
  try {
    httpsPort = await listen(server, config.httpsPort, config.bind);
    if (httpServer) {
      const httpPort = await listen(httpServer, config.httpPort as number, config.bind);
      httpUrl = `http://${hostForUrl(config.bind)}:${httpPort}`;
    }
  } catch (error) {
    stopListening();
    logs.close();
    throw error;
  }
  const origin = config.origin?.replace(/\/$/, '') || deriveOrigin(config.hostnames[0] as string, httpsPort);
  const externalUrl = config.externalUrl?.replace(/\/$/, '') || origin;

  const { sqlite, db } = openDatabase(join(config.dataDir, DATABASE_FILE));
  // Operator lines (the bootstrap admin's password) are held until start has succeeded (see below).
  const print = options.announce ?? ((line: string) => process.stdout.write(`${line}\n`));
  const held: string[] = [];
  let started = false;
  const deps: GatewayDeps = {
    config,
    db,
    sqlite,
    logger,
    accessLog,
    services: new ServiceRegistry(),
    runtime: { origin: () => origin, externalUrl: () => externalUrl, caPem: () => tls.caPem, serverTls: () => tls },
    now: options.now ?? (() => new Date()),
    announce: (line) => (started ? print(line) : held.push(line)),
  };
  const instances: HandlerInstance[] = [];
  try {
    for (const module of HANDLER_MODULES) instances.push(await module.init(deps));
    const { routing, compiled } = compileInstances(instances, deps);
    let table: ServiceTable = buildServiceTable(routing.current(), compiled);
    routing.subscribe((snapshot) => {
      table = buildServiceTable(snapshot, compiled);
    });
    requests.open(
      createPipeline(
        [
          createRequestIdStage(),
          createAccessLogStage(accessLog),
          createLimitsStage(config.limits),
          createCanonicalPathStage(),
          createRouteMatchStage(() => table, compileRpc(instances)),
        ],
        logger,
        guardMeshBody,
      ),
    );
    const mounts = instances.flatMap((i) => i.mounts ?? []);
    const upgradeHandlers = new Map(mounts.flatMap((m) => (m.upgrade ? [[m.service, m.upgrade] as const] : [])));
    upgrades.open(createUpgradeListener(() => table, upgradeHandlers, logger));
  } catch (error) {
    stopListening();
    await closeAll(instances, logger);
    sqlite.close();
    logs.close();
    // A domain that failed after the bootstrap admin was created: its password is shown now, with the failure,
    // rather than never — the row stays, and the next start (once the cause is fixed) will not print it again.
    for (const line of held) print(line);
    throw error;
  }
  const httpsUrl = `https://${hostForUrl(config.bind)}:${httpsPort}`;
  logger.info({ https: httpsUrl, http: httpUrl, origin, cluster: config.clusterName }, 'listening');
  logger.flush(); // whoever waits for this line need not wait for the next periodic flush
  started = true;
  for (const line of held.splice(0)) print(line);

  return {
    httpsUrl,
    httpUrl,
    origin,
    caPem: tls.caPem,
    deps,
    async close(graceMs = 5000, reason = 'closed') {
      const closing = listeners.map(closeServer);
      for (const socket of sockets) if (!hasInflight(socket)) socket.destroy();
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      await Promise.all(closing);
      clearTimeout(timer);
      await closeAll(instances, logger);
      sqlite.close();
      logger.info({ reason }, 'stopped');
      logs.close();
    },
  };
}

/** The domains' routes and mounts compiled with the gateway's stages, and the live routing prefixes. */
function compileInstances(instances: HandlerInstance[], deps: GatewayDeps) {
  const mesh = deps.services.find(MESH_DIRECTORY);
  const compiled = compileHandlers(instances, {
    authenticator: deps.services.get(AUTHENTICATOR),
    sharedRealmAuthenticator: mesh?.egressAuthenticator,
    meshVerify: mesh ? createMeshVerifyStage({ directory: mesh, mesh: deps.config.mesh, now: deps.now }) : undefined,
  });
  return { routing: deps.services.get(ROUTING_SOURCE), compiled };
}

type Handle = ReturnType<typeof createPipeline>;
type UpgradeListener = ReturnType<typeof createUpgradeListener>;

/** A listener whose target is set later; calls made before that are queued, then replayed in order. */
class Deferred<A extends unknown[]> {
  #target: ((...args: A) => unknown) | null = null;
  readonly #waiting: A[] = [];
  readonly listener = (...args: A): void => {
    if (this.#target) this.#target(...args);
    else this.#waiting.push(args);
  };

  open(target: (...args: A) => unknown): void {
    this.#target = target;
    for (const args of this.#waiting.splice(0)) target(...args);
  }
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

function trackSockets(server: HttpServer | Http2SecureServer, sockets: Set<Tracked>): void {
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
