/**
 * accessLog: one structured line per finished request, in pino's line
 * format (`level`, `time`, `svc`, the fields, `msg: "request"`). The query
 * string is never logged: it can carry credentials
 * (`/api/auth/refresh?refresh_token=`). The line is built here rather than
 * by pino, without redaction (gateway/log.ts), so only the fixed fields
 * below may go into it — never headers, bodies or the query.
 *
 * The same close event ends the request's span and records its metrics
 * (observability/request.ts): one listener per request for all three.
 */

import type { RequestContext } from '../../http/context.ts';
import type { AccessSink } from '../../log.ts';
import type { RequestObserver } from '../../observability/request.ts';
import type { Stage } from '../stage.ts';

const INFO = 30;

/** `"name":value,` for a string that may be absent (pino leaves out undefined fields). */
function optional(name: string, value: string | null | undefined): string {
  return value == null ? '' : `"${name}":${JSON.stringify(value)},`;
}

function accessLine(ctx: RequestContext, bindings: string): string {
  const ms = performance.now() - ctx.startedAt;
  const principal = ctx.principal;
  return (
    `{"level":${INFO},"time":${Date.now()},"svc":"meshgate",${bindings}"req_id":${JSON.stringify(ctx.requestId)},` +
    `"method":${JSON.stringify(ctx.method)},"path":${JSON.stringify(ctx.rawPath)},"status":${ctx.res.statusCode},` +
    `${optional('service', ctx.service)}${optional('user', principal?.userId)}` +
    `${optional('source', principal?.source)}` +
    `${ctx.span.isRecording() ? optional('trace_id', ctx.span.spanContext().traceId) : ''}` +
    `"ms":${ms},"aborted":${!ctx.res.writableFinished},"msg":"request"}\n`
  );
}

/** `bindings`: extra fields for every line of this listener, e.g. `{ legacy_port: 8081 }`. */
export function createAccessLogStage(
  sink: AccessSink,
  bindings: Readonly<Record<string, string | number>> = {},
  observer: RequestObserver | null = null,
): Stage {
  const fixed = Object.entries(bindings)
    .map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)},`)
    .join('');
  return {
    name: 'accessLog',
    run(ctx: RequestContext) {
      if (observer) {
        observer.begin(ctx);
        // `on`, not `once`: a response closes once, and a once wrapper is one more allocation and removal a request.
        ctx.res.on('close', () => {
          observer.end(ctx);
          if (sink.enabled) sink.write(accessLine(ctx, fixed));
        });
      } else if (sink.enabled) ctx.res.on('close', () => sink.write(accessLine(ctx, fixed)));
      return 'continue';
    },
  };
}
