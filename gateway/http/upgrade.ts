/**
 * HTTP/1.1 Upgrade requests (websockets). The TLS listener (h2 with
 * allowHTTP1) and the plain listener emit 'upgrade' instead of 'request' for
 * them, so the ingress pipeline does not run: this listener does the path
 * checks and service resolution itself and hands the socket to the mount's
 * `upgrade`. Errors before the mount writes are answered on the raw socket.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ApiError } from '../errors/api-error.ts';
import { GatewayErrors } from '../errors/gateway-errors.ts';
import type { ServiceMount, UpgradeContext } from '../module.ts';
import { problemWithPath } from '../pipeline/stages/canonical-path.ts';
import type { ServiceTable } from '../routing/service-table.ts';
import { splitTarget } from './context.ts';

type UpgradeHandler = NonNullable<ServiceMount['upgrade']>;

/** The mount's upgrade hook for a path, after the same path checks and service resolution as the pipeline's. */
function upgradeTarget(
  table: Pick<ServiceTable, 'resolve'>,
  handlers: ReadonlyMap<string, UpgradeHandler>,
  rawPath: string,
) {
  const problem = problemWithPath(rawPath);
  if (problem) throw GatewayErrors.make.non_canonical_path({ problem });
  const resolved = table.resolve(rawPath);
  if (!resolved) throw GatewayErrors.make.route_not_found();
  if (!resolved.enabled) throw GatewayErrors.make.service_disabled({ service: resolved.service });
  const handler = handlers.get(resolved.service);
  if (!handler) throw GatewayErrors.make.route_not_found();
  return { resolved, handler };
}

/** `table` resolves a path to its service; a domain's extra listener (legacy runtime ports) passes its own. */
export function createUpgradeListener(
  table: () => Pick<ServiceTable, 'resolve'>,
  handlers: ReadonlyMap<string, UpgradeHandler>,
  logger: Logger,
) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const { rawPath, query } = splitTarget(req.url);
    const requestId = randomUUID();
    socket.on('error', () => socket.destroy());
    const run = async () => {
      const { resolved, handler } = upgradeTarget(table(), handlers, rawPath);
      const ctx: UpgradeContext = {
        requestId,
        req,
        method: (req.method ?? 'GET').toUpperCase(),
        rawPath,
        query,
        service: resolved.service,
        rest: resolved.rest,
        logger,
      };
      await handler(ctx, socket, head);
    };
    run().catch((error: unknown) => {
      const apiError = error instanceof ApiError ? error : GatewayErrors.make.internal_error();
      if (!(error instanceof ApiError)) logger.error({ err: error, req_id: requestId }, 'unhandled upgrade error');
      logger.info(
        { req_id: requestId, method: req.method, path: rawPath, status: apiError.status, upgrade: true },
        'request',
      );
      writeSocketError(socket, apiError, requestId);
    });
  };
}

/** An HTTP/1.1 error response on a socket that never became a stream. */
export function writeSocketError(socket: Duplex, error: ApiError, requestId: string): void {
  if (socket.destroyed || !socket.writable) return;
  const body = JSON.stringify(error.body(requestId));
  const auth = error.status === 401 ? 'www-authenticate: Bearer\r\n' : '';
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n` +
      `content-type: ` +
      `application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `${auth}x-request-id: ${requestId}\r\nconnection: ` +
      `close\r\n\r\n${body}`,
  );
}
