/**
 * The one way meshgate builds a listener: the common prelude stages
 * (requestId → accessLog → limits → canonicalPath) ahead of the listener's
 * own, on the kernel's HTTPS or plain-HTTP server with its slow-client
 * guards (gateway/http/listeners.ts). The main port and every legacy
 * runtime port go through here, so their ingress cannot drift apart.
 */
import type { Server as HttpServer } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from '../gateway/config/schema.ts';
import type { NodeRequest, NodeResponse } from '../gateway/http/context.ts';
import { createHttpsListener, createPlainHttpListener, type ServerKeyPair } from '../gateway/http/listeners.ts';
import { authorityOf } from '../gateway/http/origin.ts';
import type { AccessSink } from '../gateway/log.ts';
import { guardMeshBody } from '../gateway/mesh/body-guard.ts';
import type { ListenerFactory, ListenerOptions } from '../gateway/module.ts';
import type { RequestObserver } from '../gateway/observability/request.ts';
import { createPipeline } from '../gateway/pipeline/run.ts';
import type { Stage } from '../gateway/pipeline/stage.ts';
import { createAccessLogStage } from '../gateway/pipeline/stages/access-log.ts';
import { createCanonicalPathStage } from '../gateway/pipeline/stages/canonical-path.ts';
import { createLimitsStage } from '../gateway/pipeline/stages/limits.ts';
import { createRequestIdStage } from '../gateway/pipeline/stages/request-id.ts';

export interface IngressBase {
  readonly config: Readonly<Config>;
  readonly accessLog: AccessSink;
  readonly tls: ServerKeyPair;
  /** Every request's span and metrics, on every listener alike. */
  readonly observer: RequestObserver;
}

type AccessFields = ListenerOptions['accessFields'];

/** The stages every listener runs first, in STAGE_ORDER (test/unit/gateway/pipeline/stage-order.test.ts checks). */
export function ingressPrelude(
  base: Pick<IngressBase, 'config' | 'accessLog'> & Partial<Pick<IngressBase, 'observer'>>,
  accessFields?: AccessFields,
): Stage[] {
  const accessLog = createAccessLogStage(base.accessLog, accessFields, base.observer ?? null);
  return [createRequestIdStage(), accessLog, createLimitsStage(base.config.limits), createCanonicalPathStage()];
}

/** The one pipeline factory: the prelude, then the listener's stages; the mesh body guard sees every request first. */
export function createIngressPipeline(base: IngressBase, options: ListenerOptions) {
  const stages = [...ingressPrelude(base, options.accessFields), ...options.stages];
  return createPipeline(stages, options.logger, guardMeshBody);
}

/** What a listener calls per request: the ingress pipeline, or the queue that holds requests until it exists. */
type Handle = (req: NodeRequest, res: NodeResponse) => void;

/** The kernel's HTTPS server (HTTP/2 + HTTP/1.1) with its guards, its connections tracked. */
export function httpsListening(base: IngressBase, handle: Handle): Listening & { server: Http2SecureServer } {
  const server = createHttpsListener(base.tls, base.config.limits, handle);
  return { server, sockets: trackSockets(server) };
}

export function plainListening(base: IngressBase, handle: Handle): Listening {
  const server = createPlainHttpListener(base.config.limits, handle);
  return { server, sockets: trackSockets(server) };
}

export function createListenerFactory(base: IngressBase): ListenerFactory {
  return { https: (options) => httpsListening(base, createIngressPipeline(base, options)) };
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

type Tracked = Socket & { _meshgateInflight?: number };

/** A bound listener of either kind with its tracked connections. */
export interface Listening {
  readonly server: HttpServer | Http2SecureServer;
  readonly sockets: ReadonlySet<Socket>;
}

/** The listener's connections and, per connection, how many requests are in flight (graceful close spares those). */
export function trackSockets(server: HttpServer | Http2SecureServer, sockets = new Set<Tracked>()): Set<Tracked> {
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

/** Binds; a taken or forbidden address becomes one clear line for the operator, not a raw errno. */
export function listen(server: HttpServer | Http2SecureServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE'
          ? 'the address is already in use'
          : error.code === 'EACCES'
            ? 'permission denied'
            : error.message;
      reject(new Error(`cannot listen on ${authorityOf(host, port)}: ${why}`, { cause: error }));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Stops accepting, closes idle connections now and busy ones once their requests end or graceMs passes. */
export async function closeGracefully(listeners: readonly Listening[], graceMs: number): Promise<void> {
  const closing = listeners.map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve())));
  const sockets = listeners.flatMap((l) => [...l.sockets]) as Tracked[];
  for (const socket of sockets) if ((socket._meshgateInflight ?? 0) === 0) socket.destroy();
  const timer = setTimeout(() => {
    for (const socket of sockets) socket.destroy();
  }, graceMs);
  await Promise.all(closing);
  clearTimeout(timer);
}
