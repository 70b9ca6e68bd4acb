/**
 * Websocket upgrades through undici's upgrade API on the deployment's pool:
 * the upstream's 101 head is relayed on the request's response (bound to the
 * client's connection, so Node writes the head), then the two sockets are
 * piped both ways until either side closes. A refused or failed upgrade
 * rejects before anything is written, so the gateway answers it as an error
 * response; a client that leaves before the 101 ends the handshake upstream.
 * The access line is written when the connection closes.
 *
 * An open websocket is not a one-time decision: it is tracked with the check
 * that admitted it (open-streams.ts; the deployment must also still take
 * websockets) and destroyed once that check fails.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestContext } from '../../gateway/http/context.ts';
import type { Principal } from '../../gateway/principal.ts';
import { ServingErrors } from './errors.ts';
import { pinnedReplica, upstreamError, upstreamPath } from './exchange.ts';
import type { PathMap } from './headers.ts';
import { downstreamResponseHeaders, upstreamRequestHeaders } from './headers.ts';
import type { OpenStreams } from './open-streams.ts';
import { forwardFacts, type ProxyTarget } from './proxy.ts';

export async function proxyUpgrade(
  ctx: RequestContext,
  client: Duplex,
  head: Buffer,
  target: ProxyTarget,
  below: string,
  origin: URL,
  principal: Principal | null,
  access: { streams: OpenStreams; stillAllowed: () => Promise<boolean> },
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
  // A client that leaves before the 101 ends the handshake upstream too, rather than leaving it pending until the
  // timeout; the exchange is then logged as the client's (499, access-log.ts), not as the upstream's failure. One
  // already gone (closed while the request was admitted) is not heard by the listener below: no handshake starts.
  if (client.destroyed) return;
  const left = new AbortController();
  const onLeft = () => left.abort(new Error('client closed'));
  client.once('close', onLeft);
  let upstream: { headers: IncomingHttpHeaders; socket: Duplex };
  try {
    upstream = await replica.pool.upgrade({
      path: upstreamPath(target.maps[replica.index] as PathMap, below, ctx.query),
      method: 'GET',
      headers,
      protocol: 'websocket',
      signal: AbortSignal.any([AbortSignal.timeout(target.timeoutMs), left.signal]),
    });
  } catch (error) {
    if (client.destroyed) return;
    const refusal = upstreamError(error as Error, target.label);
    target.observed.errors.labels(target.label, refusal.reason).inc();
    throw refusal;
  } finally {
    client.off('close', onLeft);
  }
  const { socket } = upstream;
  if (client.destroyed) {
    socket.destroy();
    return;
  }
  try {
    switchProtocols(ctx, upstream.headers, target.maps[replica.index] as PathMap);
  } catch (error) {
    // A head Node will not write (a value it refuses): nothing reached the client, the upstream is let go.
    socket.destroy();
    throw ServingErrors.make.upstream_bad_response({ upstream: target.label }, error);
  }
  if (head.length > 0) socket.write(head);
  const closeBoth = () => {
    client.destroy();
    socket.destroy();
  };
  socket.on('error', closeBoth).on('close', closeBoth);
  client.on('error', closeBoth).on('close', closeBoth);
  socket.pipe(client);
  client.pipe(socket);
  access.streams.track(client, access.stillAllowed);
}

/**
 * The 101 on the request's response: the upstream's headers as any answer of it is relayed (hop-by-hop ones
 * dropped, Location and cookies rewritten), then the handshake's own `Connection` and `Upgrade` (RFC 9110 §7.8).
 * A 1xx has no content (RFC 9110 §8.6), and the request id is the gateway's.
 */
function switchProtocols(ctx: RequestContext, upstream: IncomingHttpHeaders, map: PathMap): void {
  const headers = downstreamResponseHeaders(upstream, map);
  delete headers['content-length'];
  headers.connection = 'Upgrade';
  headers.upgrade = upstream.upgrade ?? 'websocket';
  headers['x-request-id'] = ctx.requestId;
  const res = ctx.res as ServerResponse;
  res.writeHead(101, headers);
  res.end();
}
