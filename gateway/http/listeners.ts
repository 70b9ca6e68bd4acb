/**
 * The HTTPS (HTTP/2 + HTTP/1.1) and plain-HTTP listeners with their
 * slow-client guards, built the same way for the main port and for each
 * legacy per-deployment port. Modelled on nginx (`client_header_timeout`,
 * `http2_max_concurrent_streams`, `ssl_handshake_timeout`) and Envoy
 * (`request_headers_timeout`, `max_concurrent_streams`, transport socket
 * connect timeout):
 *
 * - TLS handshake: a socket must finish it within handshakeTimeoutMs
 *   (tls.Server `handshakeTimeout`), so a silent TCP connection is closed.
 * - HTTP/1.1 request head: an absolute deadline counted from the head's
 *   first byte (from the connection for the first request), not an idle
 *   timer that every trickled byte resets. Node's own `headersTimeout`
 *   does this for http.Server and for the HTTP/1.1 fallback of an HTTP/2
 *   server, checked every `connectionsCheckingInterval`; that interval is
 *   tightened so the deadline is kept to within a fraction of itself.
 * - HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS is advertised (RFC 9113 §6.5.2),
 *   and a session with no stream open (at its start, and each time its last
 *   stream closes) must open one within the head deadline.
 * - Any connection or session moving no bytes for idleTimeoutMs is closed.
 */
import { createServer as createHttpServer, type Server as HttpServer, type RequestListener } from 'node:http';
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from 'node:http2';
import type { Config } from '../config/schema.ts';
import { type HandshakeOptions, LISTENER_TLS_OPTIONS, type ServerKeyPair } from '../tls/serving-certificate.ts';
import { answerClientErrors } from './client-errors.ts';
import { endUnreadUploads } from './early-response.ts';
import { RequestIdResponse } from './response.ts';

type Limits = Config['limits'];
type Handler = (req: Http2ServerRequest, res: Http2ServerResponse) => void;

export type { ServerKeyPair };

/** How often Node sweeps connections for expired heads: a tenth of the deadline, at most once a second. */
function checkingInterval(limits: Limits): number {
  return Math.max(10, Math.min(1000, Math.floor(limits.headersTimeoutMs / 10)));
}

/** `handshake`: the ALPN and certificate callbacks of a rotatable certificate (gateway/tls/serving-certificate.ts). */
export function createHttpsListener(
  tls: ServerKeyPair,
  limits: Limits,
  handle: Handler,
  handshake: HandshakeOptions = {},
): Http2SecureServer {
  const server = createSecureServer(
    {
      ...handshake,
      allowHTTP1: true,
      Http1ServerResponse: RequestIdResponse,
      noDelay: true,
      ...LISTENER_TLS_OPTIONS,
      key: tls.keyPem,
      cert: tls.certPem,
      handshakeTimeout: limits.handshakeTimeoutMs,
      settings: { maxConcurrentStreams: limits.maxConcurrentStreams },
    },
    handle,
  );
  // The HTTP/1.1 fallback reads these like http.Server does (untyped on Http2SecureServer in @types/node);
  // the interval is read when listening starts.
  Object.assign(server, {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: checkingInterval(limits),
  });
  server.setTimeout(limits.idleTimeoutMs);
  server.on('session', (session: ServerHttp2Session) => {
    enforceHeadDeadline(session, limits.headersTimeoutMs);
    releaseIdleTimerOnClose(session);
  });
  // The only other protocol ALPN selects is a TLS-ALPN-01 validation's, which carries nothing after its handshake
  // (RFC 8737 §3); Node's HTTP/2 server would otherwise hold such a socket until its unknownProtocolTimeout.
  server.on('unknownProtocol', (socket) => socket.destroy());
  endUnreadUploads(server);
  answerClientErrors(server);
  return server;
}

export function createPlainHttpListener(limits: Limits, handle: RequestListener): HttpServer {
  const server = createHttpServer(
    {
      ServerResponse: RequestIdResponse,
      maxHeaderSize: Math.max(16384, limits.maxHeaderBytes * 2),
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: checkingInterval(limits),
    },
    handle,
  );
  server.setTimeout(limits.idleTimeoutMs);
  answerClientErrors(server);
  return server;
}

/**
 * Node arms each session's idle timer (server.setTimeout) but does not always disarm it: `setTimeout(0)` is ignored
 * on a destroyed session, and both destroy() and a closed socket (Node's socketOnClose calls close(), then tears the
 * session down directly) mark it destroyed before trying. The timer then holds the closed session and its socket for
 * idleTimeoutMs (minutes). Disarming in destroy(), and in close() once the socket is gone, covers every teardown;
 * a graceful close on a live socket keeps the timer, so a stream that never ends is still cut.
 */
function releaseIdleTimerOnClose(session: ServerHttp2Session): void {
  const { close, destroy } = session;
  session.destroy = (error?: Error, code?: number) => {
    session.setTimeout(0);
    destroy.call(session, error, code);
  };
  session.close = (callback?: () => void) => {
    if (session.socket?.destroyed) session.setTimeout(0);
    close.call(session, callback);
  };
}

/**
 * The HTTP/2 side of the head deadline. Node emits a stream only once its
 * header block is complete (HEADERS then every CONTINUATION up to
 * END_HEADERS), and does not surface a block that is still arriving, so a
 * later stream's head trickled one CONTINUATION at a time cannot be timed by
 * itself. What can be timed: a session with no stream open must open one
 * within the deadline, at its start and again each time its last stream
 * closes; otherwise it is closed with GOAWAY (RFC 9113 §6.8). A trickled head
 * therefore lives at most twice the deadline past the session's last open
 * stream, and an idle keep-alive session the deadline (Node's HTTP/1.1
 * keep-alive timeout, 5 s, is shorter still).
 */
function enforceHeadDeadline(session: ServerHttp2Session, deadlineMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  let destroyTimer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      // GOAWAY first, so an idle client knows not to reuse the session; a head still arriving keeps nghttp2
      // from finishing that close, so the session is destroyed if it has not closed after the same deadline.
      session.close();
      destroyTimer = setTimeout(() => session.destroy(), deadlineMs);
      destroyTimer.unref();
    }, deadlineMs);
    timer.unref();
  };
  session.on('stream', (stream) => {
    clearTimeout(timer);
    open += 1;
    stream.once('close', () => {
      open -= 1;
      if (open === 0 && !session.closed && !session.destroyed) arm();
    });
  });
  session.once('close', () => {
    clearTimeout(timer);
    clearTimeout(destroyTimer);
  });
  arm();
}
