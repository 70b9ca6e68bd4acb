/**
 * Node's HTTP/1.1 parser refuses a request head larger than its limit (16 KiB by default: a long
 * query string is enough) before any handler runs, and by default answers a bare 431 with no
 * body. Here that refusal carries the same JSON body and reason as every other one, with a
 * request id. Other parse failures keep Node's answer (its default `clientError` behaviour).
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayErrors } from '../errors/gateway-errors.ts';

interface ClientErrorSource {
  on(event: 'clientError', listener: (error: NodeJS.ErrnoException, socket: Duplex) => void): unknown;
}

/**
 * The status written raw on each socket here: a request whose head was parsed and whose body was not (a malformed
 * chunk, a request timeout) has a response that never sent a head, and its access line reads the status from here.
 */
const writtenRaw = new WeakMap<object, number>();

/** The status this module wrote raw on `socket` (the request's), if it wrote one. */
export function statusWrittenRaw(socket: object | null | undefined): number | undefined {
  return socket ? writtenRaw.get(socket) : undefined;
}

const NODE_DEFAULT_STATUS: Readonly<Record<string, number>> = {
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

/**
 * The client may still be sending the rest of the oversized head: closing at once would reset the
 * connection under the answer (the client reads a TLS EOF, not the 431). As nginx's lingering_close
 * does, the rest is read and discarded for a bounded time and size, then the socket is closed.
 */
const LINGER_MS = 2000;
const LINGER_BYTES = 1024 * 1024;

function lingerThenClose(socket: Duplex): void {
  // Node's parser stays attached and would fail (and call back here) on every further chunk: detach it.
  socket.removeAllListeners('data');
  let discarded = 0;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_BYTES) socket.destroy();
  });
  socket.once('close', () => clearTimeout(timer));
  socket.resume();
}

export function answerClientErrors(server: ClientErrorSource): void {
  server.on('clientError', (error, socket) => {
    // Not an HTTP parse failure (a TLS handshake that never finished, a reset): nothing can be answered.
    const http = error.code !== undefined && (error.code.startsWith('HPE_') || error.code in NODE_DEFAULT_STATUS);
    if (!http || !socket.writable) {
      socket.destroy();
      return;
    }
    if (error.code === 'HPE_HEADER_OVERFLOW') {
      const requestId = randomUUID();
      const body = JSON.stringify(GatewayErrors.make.headers_too_large().body(requestId));
      writtenRaw.set(socket, 431);
      socket.end(
        `HTTP/1.1 431 ${STATUS_CODES[431]}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
          `x-request-id: ${requestId}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      lingerThenClose(socket);
      return;
    }
    const status = NODE_DEFAULT_STATUS[error.code as string] ?? 400;
    writtenRaw.set(socket, status);
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\n\r\n`);
    socket.destroy();
  });
}
