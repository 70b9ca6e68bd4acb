/**
 * The admin listener: plain HTTP on its own port (loopback by default), apart
 * from the public HTTPS listener so that scraping never competes with, or is
 * reachable through, the public origin — as Envoy's admin port and Caddy's
 * admin endpoint are kept apart. It serves `GET /metrics` in the Prometheus
 * text format and nothing else. With `admin.metricsToken` set, a scrape must
 * present it as a bearer token (Prometheus `authorization` in scrape_config).
 * Under workers the primary binds it and a scrape combines every worker's
 * metrics with its own (worker-metrics.ts).
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { collectDefaultMetrics } from 'prom-client';
import { metricsOpenOffLoopback } from '../gateway/config/load.ts';
import type { Config } from '../gateway/config/schema.ts';
import type { ApiError } from '../gateway/errors/api-error.ts';
import { GatewayErrors } from '../gateway/errors/gateway-errors.ts';
import { urlOf } from '../gateway/http/origin.ts';
import type { GatewayMetrics } from '../gateway/observability/metrics.ts';
import { REQUEST_DURATION } from '../gateway/observability/request.ts';
import type { ProcessPlace } from '../gateway/process/link.ts';
import { listen } from './listeners.ts';
import { WorkersMetrics } from './worker-metrics.ts';

/** This process's registry, or on a primary every process's combined. */
function scrapeFor(metrics: GatewayMetrics, place: ProcessPlace): () => Promise<string> {
  if (place.role !== 'primary') return () => metrics.registry.metrics();
  const workers = new WorkersMetrics(place, metrics.registry);
  // A deployment deleted (the serving domain removes its request series in every process, this one included): the
  // workers that exited before it must not keep it in the sum either.
  metrics.histogram(REQUEST_DURATION).onRemove((label, value) => workers.forgetDeparted(label, value));
  return () => workers.render();
}

export interface AdminListener {
  readonly url: string;
  close(): Promise<void>;
}

/** Tokens compared as digests, so neither their content nor their length leaks through timing. */
const digest = (value: string) => createHash('sha256').update(value).digest();

function refuse(res: ServerResponse, error: ApiError): void {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (error.status === 401) headers['www-authenticate'] = 'Bearer';
  res.writeHead(error.status, headers).end(JSON.stringify(error.body(randomUUID())));
}

/** With a token configured, the request must present it as `Bearer <token>`; without one, every scrape passes. */
function presentsToken(req: IncomingMessage, expected: Buffer | null): boolean {
  if (!expected) return true;
  const presented = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  return presented !== undefined && timingSafeEqual(digest(presented), expected);
}

async function sendMetrics(
  metrics: GatewayMetrics,
  scrape: () => Promise<string>,
  req: IncomingMessage,
  res: ServerResponse,
  logger: Logger,
): Promise<void> {
  try {
    const text = await scrape();
    res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : text);
  } catch (error) {
    logger.error({ err: error }, 'metrics collection failed');
    refuse(res, GatewayErrors.make.internal_error());
  }
}

function handler(metrics: GatewayMetrics, place: ProcessPlace, token: string | null, logger: Logger) {
  const expected = token === null ? null : digest(token);
  const scrape = scrapeFor(metrics, place);
  return async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return refuse(res, GatewayErrors.make.route_not_found());
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return refuse(res, GatewayErrors.make.method_not_allowed({ allowed: ['GET', 'HEAD'] }));
    if (!presentsToken(req, expected)) return refuse(res, GatewayErrors.make.not_authenticated());
    return sendMetrics(metrics, scrape, req, res, logger);
  };
}

/** Binds the admin listener when `admin.port` is set; the process-wide metrics (event loop, GC, memory) join then. */
export async function startAdminListener(
  config: Readonly<Config>,
  place: ProcessPlace,
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<AdminListener | null> {
  const { port, bind, metricsToken } = config.admin;
  if (port === null) return null;
  collectDefaultMetrics({ register: metrics.registry });
  const server: Server = createServer(
    { maxHeaderSize: 8192, requestTimeout: 10_000, headersTimeout: 5_000 },
    handler(metrics, place, metricsToken, logger),
  );
  server.keepAliveTimeout = 5_000;
  const bound = await listen(server, port, bind);
  // Allowed only by admin.allowUnauthenticatedMetrics (verifyConfig refuses it otherwise): said once, at start.
  if (metricsOpenOffLoopback(config.admin)) {
    logger.warn(
      { bind, port: bound, setting: 'PLATFORM_ALLOW_UNAUTHENTICATED_METRICS' },
      'the admin listener serves /metrics with no token on a non-loopback address',
    );
  }
  return {
    url: urlOf('http', bind, bound),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
