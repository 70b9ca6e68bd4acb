/**
 * Websocket upgrades through undici's upgrade API on the deployment's pool:
 * the upstream's 101 head is relayed, then the two sockets are piped both
 * ways until either side closes. A refused or failed upgrade rejects before
 * anything is written, so the gateway answers it as an error response.
 *
 * An open websocket is not a one-time decision: each is registered with the
 * check that admitted it, re-run every `OpenSockets` sweep, and destroyed
 * once the check fails (the user disabled or signed out, the grant revoked,
 * the deployment deleted, made private or its websockets turned off). A
 * socket thus never outlives the access — nor the credential — it was
 * opened with by more than one sweep.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { UpgradeContext } from '../../gateway/module.ts';
import type { Principal } from '../../gateway/principal.ts';
import { ServingErrors } from './errors.ts';
import { pinnedReplica, upstreamError, upstreamPath } from './exchange.ts';
import type { PathMap } from './headers.ts';
import { upstreamRequestHeaders } from './headers.ts';
import { forwardFacts, type ProxyTarget } from './proxy.ts';

export async function proxyUpgrade(
  ctx: UpgradeContext,
  client: Duplex,
  head: Buffer,
  target: ProxyTarget,
  below: string,
  origin: URL,
  principal: Principal | null,
  access: { sockets: OpenSockets; stillAllowed: () => Promise<boolean> },
): Promise<void> {
  // undici sets `connection: upgrade` and `upgrade: websocket` itself; the sec-websocket-* headers pass through.
  const headers = upstreamRequestHeaders(ctx.req.headers, forwardFacts(ctx, target, origin, principal));
  target.requests.total++;
  // Balanced like any request (its affinity cookie honoured); not retried: an upgrade is a conversation's start.
  const replica = target.plane.balancer.pick(pinnedReplica(ctx.req.headers.cookie, target), null);
  if (!replica) {
    const retryAfter = target.plane.balancer.backInSeconds();
    throw ServingErrors.make.no_healthy_upstream({ upstream: target.label, retry_after: retryAfter });
  }
  let upstream: { headers: IncomingHttpHeaders; socket: Duplex };
  try {
    upstream = await replica.pool.upgrade({
      path: upstreamPath(target.maps[replica.index] as PathMap, below, ctx.query),
      method: 'GET',
      headers,
      protocol: 'websocket',
      signal: AbortSignal.timeout(target.timeoutMs),
    });
  } catch (error) {
    const refusal = upstreamError(error as Error, target.label);
    target.observed.errors.labels(target.label, refusal.reason).inc();
    throw refusal;
  }
  const { socket } = upstream;
  if (client.destroyed) {
    socket.destroy();
    return;
  }
  client.write(`HTTP/1.1 101 Switching Protocols\r\n${formatHead(upstream.headers)}\r\n`);
  if (head.length > 0) socket.write(head);
  const closeBoth = () => {
    client.destroy();
    socket.destroy();
  };
  socket.on('error', closeBoth).on('close', closeBoth);
  client.on('error', closeBoth).on('close', closeBoth);
  socket.pipe(client);
  client.pipe(socket);
  access.sockets.track(client, access.stillAllowed);
  ctx.logger.info(
    {
      req_id: ctx.requestId,
      method: ctx.method,
      path: ctx.rawPath,
      status: 101,
      service: ctx.service,
      user: principal?.userId,
    },
    'request',
  );
}

/** Open websockets and the checks that admitted them, re-run every `sweepMs` while any is open. */
export class OpenSockets {
  readonly #open = new Map<Duplex, () => Promise<boolean>>();
  #timer: NodeJS.Timeout | null = null;
  #sweeping = false;

  constructor(private readonly sweepMs: number) {}

  track(socket: Duplex, stillAllowed: () => Promise<boolean>): void {
    if (socket.destroyed) return;
    this.#open.set(socket, stillAllowed);
    socket.once('close', () => {
      this.#open.delete(socket);
      if (this.#open.size === 0) this.#stop();
    });
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.sweep(), this.sweepMs);
      this.#timer.unref();
    }
  }

  /** Re-runs every open socket's check and destroys the ones now refused (a failing check counts as refused). */
  async sweep(): Promise<void> {
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      for (const [socket, stillAllowed] of this.#open) {
        if (!(await stillAllowed().catch(() => false))) socket.destroy();
      }
    } finally {
      this.#sweeping = false;
    }
  }

  close(): void {
    this.#stop();
    for (const socket of this.#open.keys()) socket.destroy();
  }

  #stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

function formatHead(headers: IncomingHttpHeaders): string {
  let out = '';
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out += `${name}: ${v}\r\n`;
  }
  return out;
}
