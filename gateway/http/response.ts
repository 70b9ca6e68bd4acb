/**
 * The HTTP/1.1 response the listeners build (http.createServer's and the HTTP/2 server's HTTP/1.1 fallback's
 * `ServerResponse` option, and a websocket upgrade's: pipeline/run.ts), which writes the request id into its head.
 *
 * Every answer carries `x-request-id` (pipeline/stages/request-id.ts). Set with setHeader, it put every writeHead on
 * Node's merging path: a head given to writeHead after any setHeader is copied field by field through setHeader,
 * each validated again, and the fields stored in a second object (~0.5–1 µs and ~1.3 KB a proxied request;
 * bench/README.md, proxy). Kept here instead, the id is added as the head is written: a head given whole that names
 * it already (the proxy's, built fresh per request) is written as given, on Node's direct path; any other head
 * takes it through setHeader as before. A head or a setHeader naming `x-request-id` itself keeps its own value, as
 * the field set last did before.
 */
import { type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders, ServerResponse } from 'node:http';

const REQUEST_ID = 'x-request-id';

type Head = OutgoingHttpHeaders | OutgoingHttpHeader[];

export class RequestIdResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** The request's id, set by the requestId stage; null until then (and where no stage runs). */
  requestId: string | null = null;

  override writeHead(statusCode: number, reason?: string | Head, headers?: Head): this {
    const id = this.requestId;
    if (id !== null && !this.headersSent && !this.hasHeader(REQUEST_ID)) {
      const head = typeof reason === 'string' ? headers : reason;
      if (!namesRequestId(head)) this.setHeader(REQUEST_ID, id);
    }
    // Node's own overloads: (status, headers) and (status, reason, headers).
    return super.writeHead(statusCode, reason as string, headers);
  }
}

/** Whether a head given to writeHead names the request id itself: a plain object's lower-case field only. */
function namesRequestId(head: Head | undefined): boolean {
  return head !== undefined && head !== null && !Array.isArray(head) && head[REQUEST_ID] !== undefined;
}
