/** The one place replies and errors are written to the wire. */
import type { ServerResponse } from 'node:http';
import { ApiError } from '../errors/api-error.ts';
import { GatewayErrors } from '../errors/gateway-errors.ts';
import type { FoldedWarnings } from '../folded-warnings.ts';
import type { NodeResponse, Reply, RequestContext } from './context.ts';

export function sendReply(response: NodeResponse, reply: Reply): void {
  // Http2ServerResponse has the same writeHead/end shape; the union's overloads just do not unify.
  const res = response as ServerResponse;
  const headers: Record<string, string | number> = { ...reply.headers };
  if (reply.body === undefined || reply.status === 204 || reply.status === 304) {
    res.writeHead(reply.status, headers);
    res.end();
    return;
  }
  const payload = Buffer.from(JSON.stringify(reply.body));
  headers['content-type'] ??= 'application/json';
  headers['content-length'] = payload.length;
  res.writeHead(reply.status, headers);
  res.end(payload);
}

/**
 * Turns any thrown value into a response; a full disk becomes 507, any other non-ApiError an opaque 500. A 5xx is
 * warned about with the request's id, path and deployment, folded per reason and deployment (or route): a failing
 * upstream fails every request sent to it, and its operator needs one line a window, not one a request.
 */
export function sendError(ctx: RequestContext, error: unknown, warnings: FoldedWarnings): void {
  const known =
    error instanceof ApiError ? error : isDiskFull(error) ? GatewayErrors.make.storage_full({}, error) : null;
  if (known === null) ctx.logger.error({ err: error, req_id: ctx.requestId, path: ctx.rawPath }, 'unhandled error');
  else if (known.status >= 500) warnFailed(ctx, known, warnings);
  const apiError = known ?? GatewayErrors.make.internal_error();
  ctx.failure = apiError.reason;
  if (ctx.res.headersSent) {
    // Mid-stream failure: the status is gone, so the only honest signal is an aborted body.
    ctx.res.destroy();
    return;
  }
  const headers: Record<string, string> = {};
  if (apiError.status === 401) headers['www-authenticate'] = 'Bearer';
  // 429 and 503 refusals that know when to come back say so in the header too (RFC 9110 §10.2.3).
  if (typeof apiError.extra.retry_after === 'number') headers['retry-after'] = String(apiError.extra.retry_after);
  try {
    sendReply(ctx.res, { status: apiError.status, body: apiError.body(ctx.requestId), headers });
  } catch (writeError) {
    // A response a failed writeHead left half-built cannot take another head: the exchange is cut instead, and the
    // error never escapes the runner (an unhandled rejection would end the process).
    ctx.logger.error({ err: writeError, req_id: ctx.requestId, path: ctx.rawPath }, 'error answer not written');
    ctx.res.destroy();
  }
}

function warnFailed(ctx: RequestContext, error: ApiError, warnings: FoldedWarnings): void {
  const subject = ctx.deployment ?? ctx.route?.def.path ?? ctx.service ?? '';
  const fields = {
    req_id: ctx.requestId,
    reason: error.reason,
    deployment: ctx.deployment ?? undefined,
    service: ctx.service ?? undefined,
    path: ctx.rawPath,
    cause: describeCause(error.cause),
  };
  warnings.warn(ctx.logger, `${error.reason} ${subject}`, fields, 'request failed');
}

function describeCause(cause: unknown): string | undefined {
  if (cause === undefined) return undefined;
  return cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
}

/** SQLite's SQLITE_FULL or the OS's ENOSPC anywhere in the cause chain (drizzle wraps driver errors). */
function isDiskFull(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'SQLITE_FULL' || code === 'ENOSPC') return true;
  }
  return false;
}
