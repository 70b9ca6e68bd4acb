/**
 * The admin listener: plain HTTP on its own port (loopback by default), apart
 * from the public HTTPS listener so that scraping never competes with, or is
 * reachable through, the public origin — as Envoy's admin port and Caddy's
 * admin endpoint are kept apart. It serves `GET /metrics` in the Prometheus
 * text format and nothing else. With `admin.metricsToken` set, a scrape must
 * present it as a bearer token (Prometheus `authorization` in scrape_config).
 *
 * Under workers the primary binds it and a scrape gathers every worker's
 * registry beside its own, combined as prom-client's cluster aggregation
 * does (https://github.com/siimon/prom-client#usage-with-nodejss-cluster-module):
 * counters and histograms summed, each gauge as it declares (per-process
 * state summed, database-read state taken once, default process metrics as
 * prom-client declares them).
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { AggregatorRegistry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Config } from '../gateway/config/schema.ts';
import type { ApiError } from '../gateway/errors/api-error.ts';
import { GatewayErrors } from '../gateway/errors/gateway-errors.ts';
import { urlOf } from '../gateway/http/origin.ts';
import type { GatewayMetrics } from '../gateway/observability/metrics.ts';
import { type ProcessPlace, workerQuery } from '../gateway/process/link.ts';
import { listen } from './listeners.ts';

/** The primary's question to each worker at a scrape: its registry, as prom-client's JSON. */
const WORKER_METRICS = workerQuery<MetricObjectWithValues<MetricValue<string>>[]>('admin.metrics');

/** A worker of a gateway with an admin listener answers the primary's scrapes, its process metrics included. */
export function shareWorkerMetrics(config: Readonly<Config>, place: ProcessPlace, metrics: GatewayMetrics): void {
  if (place.role !== 'worker' || config.admin.port === null) return;
  collectDefaultMetrics({ register: metrics.registry });
  place.reply(WORKER_METRICS, () => metrics.registry.getMetricsAsJSON());
}

/** This process's registry; on a primary, combined with every worker's (a worker that does not answer is left out). */
async function scrape(metrics: GatewayMetrics, place: ProcessPlace): Promise<string> {
  if (place.role !== 'primary') return metrics.registry.metrics();
  const own = await metrics.registry.getMetricsAsJSON();
  return AggregatorRegistry.aggregate([own, ...(await place.gather(WORKER_METRICS))]).metrics();
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
  place: ProcessPlace,
  req: IncomingMessage,
  res: ServerResponse,
  logger: Logger,
): Promise<void> {
  try {
    const text = await scrape(metrics, place);
    res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : text);
  } catch (error) {
    logger.error({ err: error }, 'metrics collection failed');
    refuse(res, GatewayErrors.make.internal_error());
  }
}

function handler(metrics: GatewayMetrics, place: ProcessPlace, token: string | null, logger: Logger) {
  const expected = token === null ? null : digest(token);
  return async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return refuse(res, GatewayErrors.make.route_not_found());
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return refuse(res, GatewayErrors.make.method_not_allowed({ allowed: ['GET', 'HEAD'] }));
    if (!presentsToken(req, expected)) return refuse(res, GatewayErrors.make.not_authenticated());
    return sendMetrics(metrics, place, req, res, logger);
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
  return {
    url: urlOf('http', bind, bound),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
