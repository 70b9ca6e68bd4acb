/**
 * accessLog: one structured line per finished request, in pino's line
 * format (`level`, `time`, `svc`, the fields, `msg: "request"`). The query
 * string is never logged: it can carry credentials
 * (`/api/auth/refresh?refresh_token=`). The line is built here rather than
 * by pino, without redaction (gateway/log.ts), so only the fixed fields
 * below may go into it — never other headers, bodies or the query. The two
 * values a client chooses freely, the path and the user agent, are written
 * as JSON strings (quotes, backslashes, control characters and lone
 * surrogates escaped), so neither can end the line or add a field.
 *
 * The same close event ends the request's span and records its metrics
 * (observability/request.ts), then tells the hooks the request's handlers
 * added (http/response-close.ts): one listener per request for all of them.
 * The line is built first, while the span still records, so it can name the
 * trace. An exchange closed before any head was sent is logged and counted
 * as 499 (CLIENT_CLOSED), with `aborted`, unless the gateway wrote its answer
 * raw on the socket (http/client-errors.ts): then as that answer's status.
 */

import { TrustedProxies } from '../../http/client-address.ts';
import { statusWrittenRaw } from '../../http/client-errors.ts';
import type { NodeRequest, NodeResponse, RequestContext } from '../../http/context.ts';
import { runCloseHooks, watchResponseClose } from '../../http/response-close.ts';
import type { AccessSink } from '../../log.ts';
import type { RequestObserver } from '../../observability/request.ts';
import type { Stage } from '../stage.ts';

/**
 * The status of an exchange that closed before any answer's head was sent (the client left, a websocket handshake
 * was abandoned before its 101): nginx's "client closed request", rather than the 200 a response starts with.
 */
const CLIENT_CLOSED = 499;

/** The status of an exchange that closed without an answer's head through its response. */
function settleStatus(ctx: RequestContext): void {
  if (!ctx.res.headersSent) ctx.res.statusCode = statusWrittenRaw(ctx.req.socket) ?? CLIENT_CLOSED;
}

/** Without trusted proxies the socket peer is the client. */
const NO_PROXIES = new TrustedProxies([]);

/** The longest user agent kept: real ones are well below it, and a line must not grow with a header's limit. */
const USER_AGENT_MAX = 256;

/** A declared Content-Length as a number, -1 when absent or not a length (the HTTP parsers hold a body to it). */
function declaredLength(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return -1;
  const length = Number(value);
  return Number.isSafeInteger(length) && length >= 0 ? length : -1;
}

function userAgent(req: NodeRequest): string | undefined {
  const agent = req.headers['user-agent'];
  return agent !== undefined && agent.length > USER_AGENT_MAX ? agent.slice(0, USER_AGENT_MAX) : agent;
}

function requestBytes(ctx: RequestContext): number {
  return ctx.requestBytes >= 0 ? ctx.requestBytes : declaredLength(ctx.req.headers['content-length']);
}

function responseBytes(ctx: RequestContext, res: NodeResponse): number {
  return ctx.responseBytes >= 0 ? ctx.responseBytes : declaredLength(res.getHeader('content-length'));
}

/**
 * A field's JSON string, kept for the next line while the value repeats: the method, service, deployment, user, its
 * source and the client are mostly the previous request's (about 0.3 µs a line of JSON.stringify calls). Compared as
 * strings, so an equal value from another request is the same field; anything else is stringified as before.
 */
class RepeatedField {
  #value = '';
  #json = '""';

  json(value: string): string {
    if (value !== this.#value) {
      this.#json = JSON.stringify(value);
      this.#value = value;
    }
    return this.#json;
  }
}

/** One listener's repeating fields (a listener's lines are built one at a time, on its one thread). */
interface RepeatedFields {
  readonly method: RepeatedField;
  readonly service: RepeatedField;
  readonly deployment: RepeatedField;
  readonly user: RepeatedField;
  readonly source: RepeatedField;
  readonly client: RepeatedField;
}

function repeatedFields(): RepeatedFields {
  const field = () => new RepeatedField();
  return {
    method: field(),
    service: field(),
    deployment: field(),
    user: field(),
    source: field(),
    client: field(),
  };
}

/**
 * The line, appended to field by field: one template literal with a helper per optional field built each piece as a
 * string of its own first (about 350 bytes and 0.1 µs a line more). Absent strings and unknown (negative) counts are
 * left out, as pino leaves out undefined fields; the level is info (30).
 */
function accessLine(ctx: RequestContext, bindings: string, client: string, fields: RepeatedFields): string {
  const ms = performance.now() - ctx.startedAt;
  const { principal, req, res } = ctx;
  const time = Date.now();
  let line = `{"level":30,"time":${time},"svc":"meshgate",${bindings}"req_id":${JSON.stringify(ctx.requestId)},`;
  line += `"method":${fields.method.json(ctx.method)},"path":${JSON.stringify(ctx.rawPath)},`;
  line += `"status":${res.statusCode},`;
  if (ctx.service != null) line += `"service":${fields.service.json(ctx.service)},`;
  if (ctx.deployment != null) line += `"deployment":${fields.deployment.json(ctx.deployment)},`;
  if (principal)
    line += `"user":${fields.user.json(principal.userId)},"source":${fields.source.json(principal.source)},`;
  if (client) line += `"client":${fields.client.json(client)},`;
  const agent = userAgent(req);
  if (agent !== undefined) line += `"ua":${JSON.stringify(agent)},`;
  const sent = requestBytes(ctx);
  if (sent >= 0) line += `"req_bytes":${sent},`;
  const received = responseBytes(ctx, res);
  if (received >= 0) line += `"res_bytes":${received},`;
  if (ctx.upstreamMs >= 0) line += `"upstream_ms":${ctx.upstreamMs},`;
  if (ctx.failure != null) line += `"failure":${JSON.stringify(ctx.failure)},`;
  if (ctx.span.isRecording()) line += `"trace_id":${JSON.stringify(ctx.span.spanContext().traceId)},`;
  return `${line}"ms":${ms},"aborted":${!res.writableFinished},"msg":"request"}\n`;
}

/**
 * `bindings`: extra fields for every line of this listener, e.g. `{ legacy_port: 8081 }`. `proxies`: whose
 * X-Forwarded-For names the client; without them the socket peer is the client.
 */
export function createAccessLogStage(
  sink: AccessSink,
  bindings: Readonly<Record<string, string | number>> = {},
  observer: RequestObserver | null = null,
  proxies: TrustedProxies = NO_PROXIES,
): Stage {
  const fixed = Object.entries(bindings)
    .map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)},`)
    .join('');
  const repeated = repeatedFields();
  return {
    name: 'accessLog',
    run(ctx: RequestContext) {
      // Read on arrival: an HTTP/2 stream's socket is out of reach once the stream has closed.
      const client = sink.enabled ? proxies.clientOf(ctx.req) : '';
      if (observer) {
        observer.begin(ctx);
        watchResponseClose(ctx, () => {
          settleStatus(ctx);
          // The line first: ending the span stops it recording, and the line names a recording span's trace.
          if (sink.enabled) sink.write(accessLine(ctx, fixed, client, repeated));
          observer.end(ctx);
          runCloseHooks(ctx);
        });
      } else if (sink.enabled)
        watchResponseClose(ctx, () => {
          settleStatus(ctx);
          sink.write(accessLine(ctx, fixed, client, repeated));
          runCloseHooks(ctx);
        });
      return 'continue';
    },
  };
}
