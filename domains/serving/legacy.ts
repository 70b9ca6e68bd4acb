/**
 * Legacy port-based runtime URLs (port-specific runtime URLs are legacy, kept for backward
 * compatibility only). Off unless the operator sets
 * `serving.legacyPortListeners`; then a deployment's `legacy_port` gets its
 * own HTTPS listener (the gateway's bind address and certificate) whose
 * every path goes to that deployment through the same runtime mount, auth
 * and proxy as its path-based URL, with an empty public prefix.
 */
import type { Logger } from 'pino';
import type { Config } from '../../gateway/config/schema.ts';
import type { ListenerFactory, OpenedListener, RuntimeInfo } from '../../gateway/module.ts';
import type { RoutingSnapshot } from '../../gateway/routing/source.ts';
import { ServingErrors } from './errors.ts';
import { legacyUrl } from './legacy-owned.ts';
import { type RuntimeDeps, runtimeMount } from './runtime.ts';
import { KIND_SERVICE, type LegacyPorts } from './service.ts';
import type { DeploymentRow } from './store.ts';

export interface LegacyDeps {
  /** A thunk: the runtime deps hold the DeploymentService, which is built with these listeners. */
  runtime: () => RuntimeDeps;
  info: RuntimeInfo;
  routing: () => RoutingSnapshot;
  config: Readonly<Config>;
  logger: Logger;
  /** The composition root's listener factory: the same prelude stages and guards as the main port. */
  listeners: ListenerFactory;
}

export class LegacyListeners implements LegacyPorts {
  readonly #open = new Map<string, OpenedListener>();

  constructor(private readonly deps: LegacyDeps) {}

  /** At gateway start: a port that cannot be bound is logged, the gateway still starts. */
  async openAll(rows: readonly DeploymentRow[]): Promise<void> {
    for (const row of rows) {
      if (row.legacyPort === null) continue;
      await this.open(row).catch((error: unknown) =>
        this.deps.logger.warn(
          { deployment: row.id, legacy_port: row.legacyPort, err: error },
          'legacy runtime port not opened',
        ),
      );
    }
  }

  async open(row: DeploymentRow): Promise<void> {
    const port = row.legacyPort as number;
    const { server, sockets } = this.#listener(row);
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        reject(ServingErrors.make.legacy_port_unavailable({ legacy_port: port, code: error.code }, error)),
      );
      server.listen(port, this.deps.config.bind, resolve);
    });
    this.#open.set(row.id, { server, sockets });
    this.deps.logger.info({ deployment: row.id, legacy_port: port }, 'legacy runtime port listening');
  }

  /** The deployment is gone: stop accepting and drop its connections at once. */
  async close(id: string): Promise<void> {
    const listener = this.#open.get(id);
    if (!listener) return;
    this.#open.delete(id);
    const closed = new Promise<void>((resolve) => listener.server.close(() => resolve()));
    for (const socket of listener.sockets) socket.destroy();
    await closed;
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.#open.keys()].map((id) => this.close(id)));
  }

  url(row: DeploymentRow): string | null {
    return this.#open.has(row.id) ? legacyUrl(row, this.deps.info.origin) : null;
  }

  /**
   * One HTTPS listener from the root's factory: the gateway's listener stages, then the deployment's runtime mount with
   * an empty prefix, for requests and websocket upgrades alike.
   */
  #listener(row: DeploymentRow): OpenedListener {
    const { logger, info, routing, listeners } = this.deps;
    const service = KIND_SERVICE[row.kind];
    const mount = runtimeMount(row.kind, this.deps.runtime(), {
      origin: () => new URL(this.url(row) ?? info.origin()),
      loginPath: (rawPath) => `${routing().prefixes[service]}/${row.id}${rawPath}`,
    });
    return listeners.https({
      mount,
      // The path below the (empty) prefix is the whole path; the runtime mount reads the id from `rest`.
      resolve: (rawPath) => ({ service, rest: `/${row.id}${rawPath}`, enabled: routing().enabled[service] !== false }),
      accessFields: { legacy_port: row.legacyPort as number },
      logger: logger.child({ legacy_port: row.legacyPort }),
    });
  }
}
