/**
 * The one way meshgate builds a listener: the kernel's HTTPS or plain-HTTP server with its slow-client guards
 * (gateway/http/listeners.ts), its connections tracked for a graceful close, its requests and upgrades handed to
 * the entry the request plan builds (gateway/pipeline/plan.ts). The main port and every legacy runtime port go
 * through here, so their ingress cannot drift apart.
 */
import type { Server as HttpServer } from 'node:http';
import type { Http2SecureServer, ServerHttp2Session } from 'node:http2';
import { type AddressInfo, createServer as createNetServer, Server as NetServer, type Socket } from 'node:net';
import type { Config } from '../gateway/config/schema.ts';
import type { FoldedWarnings } from '../gateway/folded-warnings.ts';
import type { NodeRequest, NodeResponse } from '../gateway/http/context.ts';
import { createHttpsListener, createPlainHttpListener } from '../gateway/http/listeners.ts';
import { authorityOf } from '../gateway/http/origin.ts';
import type { AccessSink } from '../gateway/log.ts';
import type { ListenerFactory, ListenerOptions } from '../gateway/module.ts';
import type { RequestObserver } from '../gateway/observability/request.ts';
import type { ListenerSpec, RequestPlan } from '../gateway/pipeline/plan.ts';
import type { Entry } from '../gateway/pipeline/run.ts';
import { compileMount } from '../gateway/routing/compile.ts';
import { RouteTable } from '../gateway/routing/router.ts';
import type { RouteResolver } from '../gateway/routing/service-table.ts';
import type { ServingCertificate } from '../gateway/tls/serving-certificate.ts';

export interface IngressBase {
  readonly config: Readonly<Config>;
  readonly accessLog: AccessSink;
  /** The public certificate; every HTTPS listener takes its replacements. */
  readonly tls: ServingCertificate;
  /** Every request's span and metrics, on every listener alike. */
  readonly observer: RequestObserver;
  /** Failed requests' warnings, folded across every listener of the gateway. */
  readonly warnings: FoldedWarnings;
}

/** What a listener calls per request: the ingress pipeline, or the queue that holds requests until it exists. */
type Handle = (req: NodeRequest, res: NodeResponse) => void;

/** The kernel's HTTPS server (HTTP/2 + HTTP/1.1) with its guards, its connections tracked. */
export function httpsListening(base: IngressBase, handle: Handle): Listening & { server: Http2SecureServer } {
  const server = createHttpsListener(base.tls.current, base.config.limits, handle, base.tls.handshakeOptions);
  base.tls.attach(server);
  return { server, sockets: trackSockets(server), connections: trackConnections(server) };
}

export function plainListening(base: IngressBase, handle: Handle): Listening {
  const server = createPlainHttpListener(base.config.limits, handle);
  return { server, sockets: trackSockets(server), connections: trackConnections(server) };
}

/** The domains' listener factory, and what lets its listeners' requests through once the plan exists. */
export interface OpeningListenerFactory extends ListenerFactory {
  ready(plan: RequestPlan): void;
}

/**
 * A domain may open a listener while the domains start (legacy ports at serving's start), before the request plan
 * exists: its requests and upgrades are held until `ready`, as the main listener's are.
 */
export function createListenerFactory(base: IngressBase): OpeningListenerFactory {
  let plan: RequestPlan | null = null;
  const waiting: ((plan: RequestPlan) => void)[] = [];
  return {
    https(options) {
      const requests = new Deferred<Parameters<Entry['request']>>();
      const upgrades = new Deferred<Parameters<Entry['upgrade']>>();
      const listening = httpsListening(base, requests.listener);
      listening.server.on('upgrade', upgrades.listener);
      const open = (ready: RequestPlan) => {
        const entry = ready.listener(mountListener(options, ready), options.logger);
        requests.open(entry.request);
        upgrades.open(entry.upgrade);
      };
      if (plan) open(plan);
      else waiting.push(open);
      return listening;
    },
    ready(ready) {
      plan = ready;
      for (const open of waiting.splice(0)) open(ready);
    },
  };
}

/** A listener serving one mount: every path it resolves goes to the mount's chain; there is no API below it. */
function mountListener(options: ListenerOptions, plan: RequestPlan): ListenerSpec {
  const table: RouteResolver = {
    resolve: options.resolve,
    api: new RouteTable([]),
    // A legacy port is no mesh ingress: peers call the origin.
    mounts: new Map([[options.mount.service, compileMount(options.mount, plan, false)]]),
  };
  return { routes: () => table, accessFields: options.accessFields };
}

/** A listener whose target is set later; calls made before that are queued, then replayed in order. */
export class Deferred<A extends unknown[]> {
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

/** A connection with what closing must know of it: its HTTP/1.1 responses in flight, or that it is not HTTP/1.1. */
type Tracked = Socket & {
  _meshgateResponses?: Set<TrackedResponse>;
  _meshgateUpgraded?: boolean;
  _meshgateSession?: ServerHttp2Session;
};
type TrackedResponse = {
  headersSent: boolean;
  setHeader(name: string, value: string): unknown;
  getHeader(name: string): unknown;
  on(e: 'close', f: () => void): unknown;
};

/** Listeners that are closing: their HTTP/1.1 answers say `Connection: close` (RFC 9112 §9.6). */
const draining = new WeakSet<HttpServer | Http2SecureServer>();

/**
 * How long an idle HTTP/1.1 keep-alive connection of a closing listener stays open. Closing it at once races with
 * a request the client is sending on it (the client sees a reset, RFC 9112 §9.5); within this time its next request
 * is answered, with `Connection: close`, and only a connection idle beyond it is closed.
 */
const IDLE_LINGER_MS = 1000;

/** A bound listener of either kind with its tracked connections. */
export interface Listening {
  readonly server: HttpServer | Http2SecureServer;
  /** Connections ready for HTTP (TLS ones once their handshake finished), marked with what runs on them. */
  readonly sockets: ReadonlySet<Socket>;
  /** Every accepted TCP connection while it lasts, a TLS handshake still under way included. */
  readonly connections: ReadonlySet<Socket>;
}

/**
 * Every accepted connection: what a closing listener's grace ends. One still in its TLS handshake when the close
 * began is in no other set, and could otherwise finish the handshake and serve a session for as long as its client
 * kept it busy, holding the closing process (and so its port) open.
 */
function trackConnections(server: HttpServer | Http2SecureServer): Set<Socket> {
  const connections = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  return connections;
}

/** The listener's connections: the HTTP/1.1 responses in flight on each, its HTTP/2 session, or its upgrade. */
export function trackSockets(server: HttpServer | Http2SecureServer, sockets = new Set<Tracked>()): Set<Tracked> {
  const event = 'setSecureContext' in server ? 'secureConnection' : 'connection';
  server.on(event, (socket: Tracked) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('session', (session: ServerHttp2Session) => {
    (session.socket as Tracked)._meshgateSession = session;
  });
  server.on('upgrade', (_req: unknown, socket: Tracked) => {
    socket._meshgateUpgraded = true;
  });
  // Ahead of the pipeline's own listener (the server's request handler): a request the pipeline answers synchronously
  // has its head written inside that listener, and a draining listener's `Connection: close` must be on it by then.
  server.prependListener('request', (req: { httpVersionMajor: number; socket: Tracked }, res: TrackedResponse) => {
    if (req.httpVersionMajor !== 1) return;
    const socket = req.socket;
    const responses = socket._meshgateResponses ?? new Set();
    socket._meshgateResponses = responses;
    responses.add(res);
    if (draining.has(server)) res.setHeader('connection', 'close');
    // `on`: a response closes once (no once wrapper to allocate and remove per request).
    res.on('close', () => {
      responses.delete(res);
      // A connection that went idle while closing is ended after an answer that said `Connection: close`. An answer
      // whose headers left before the close began said keep-alive: the client may be sending its next request on
      // this connection right now (RFC 9112 §9.6), so that one is answered (with `Connection: close`) or the
      // connection ends once idle for IDLE_LINGER_MS (lingerThenEnd).
      if (draining.has(server) && responses.size === 0 && res.getHeader('connection') === 'close') socket.end();
    });
  });
  return sockets;
}

/**
 * Binds; a taken or forbidden address becomes one clear line for the operator, not a raw errno. With reusePort, a
 * worker binds its own socket (SO_REUSEPORT, `exclusive` so node:cluster does not share the primary's).
 */
export function listen(
  server: HttpServer | Http2SecureServer,
  port: number,
  host: string,
  reusePort = false,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => reject(cannotListen(host, port, error));
    server.once('error', onError);
    server.listen({ port, host, ...(reusePort ? { reusePort: true, exclusive: true } : {}) }, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** The port, once bound and released (0: the free port the kernel picked); a failed bind as cannotListen says it. */
export function probeBind(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (error: NodeJS.ErrnoException) => reject(cannotListen(host, port, error)));
    probe.listen(port, host, () => {
      const bound = (probe.address() as AddressInfo).port;
      probe.close(() => resolve(bound));
    });
  });
}

/** A failed bind as one clear line for the operator, not a raw errno. */
export function cannotListen(host: string, port: number, error: NodeJS.ErrnoException): Error {
  const why =
    error.code === 'EADDRINUSE'
      ? 'the address is already in use'
      : error.code === 'EACCES'
        ? 'permission denied'
        : error.message;
  return new Error(`cannot listen on ${authorityOf(host, port)}: ${why}`, { cause: error });
}

/**
 * Stops accepting and lets what is in flight finish: each HTTP/2 session gets GOAWAY (RFC 9113 §6.8) and ends after
 * its open streams; each HTTP/1.1 connection answers what it is sent with `Connection: close` and ends after the
 * answer, or after IDLE_LINGER_MS idle; websockets are dropped at once (they have no end a close could wait for);
 * whatever is still open after graceMs is destroyed. The servers' own close() is not used: it would close idle
 * HTTP/1.1 connections at once, racing with the request a client is sending.
 */
export async function closeGracefully(listeners: readonly Listening[], graceMs: number): Promise<void> {
  const closing = listeners.map(({ server }) => {
    draining.add(server);
    return new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
  });
  const sockets = listeners.flatMap((l) => [...l.sockets]) as Tracked[];
  for (const socket of sockets) {
    if (socket._meshgateUpgraded) socket.destroy();
    else if (socket._meshgateSession) socket._meshgateSession.close();
    else lingerThenEnd(socket);
  }
  // What is open when the grace ends, not what was open when it began: connections accepted or TLS handshakes
  // finished meanwhile end too.
  const timer = setTimeout(() => {
    for (const listening of listeners) {
      for (const socket of [...listening.sockets, ...listening.connections]) socket.destroy();
    }
  }, graceMs);
  await Promise.all(closing);
  clearTimeout(timer);
  // Every connection is gone now: the servers' own close() only stops the HTTP parser's connection-checking
  // interval (Node's http server starts one per server; net.Server's close above leaves it running).
  for (const { server } of listeners) server.close();
}

function lingerThenEnd(socket: Tracked): void {
  for (const res of socket._meshgateResponses ?? []) if (!res.headersSent) res.setHeader('connection', 'close');
  const timer = setTimeout(() => {
    if ((socket._meshgateResponses?.size ?? 0) === 0) socket.end();
  }, IDLE_LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
