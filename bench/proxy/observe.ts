/**
 * bench/proxy/observe: the CPU the observability adds to one proxied request,
 * measured in process: the request span and duration histogram (begin + end,
 * as the accessLog stage runs them), the proxy's child span, traceparent
 * and in-flight gauge — with tracing export off (the default) and on.
 * The peer, in the same run, is the access-log line the same stage builds
 * for every request. Bounded: ITERATIONS requests per measure, repeated REPS
 * times, median reported. Never run by the test suite.
 *   npx tsx bench/proxy/observe.ts   (env: BENCH_ITERATIONS=200000 BENCH_REPS=5)
 */
import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import { configSchema } from '../../gateway/config/schema.ts';
import type { RequestContext } from '../../gateway/http/context.ts';
import { createMetrics } from '../../gateway/observability/metrics.ts';
import { createRequestObserver } from '../../gateway/observability/request.ts';
import { createTracing, NO_SPAN, SpanKind, type Tracing } from '../../gateway/observability/tracing.ts';
import { createAccessLogStage } from '../../gateway/pipeline/stages/access-log.ts';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 200_000);
const REPS = Number(process.env.BENCH_REPS ?? 5);
const route = { def: { path: '/' }, segments: [], stages: [] };

function fakeContext(): RequestContext & { res: EventEmitter } {
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200,
    writableFinished: true,
    getHeader: (name: string) => (name === 'content-length' ? 12 : undefined),
  });
  const headers = {
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    host: 'localhost',
    'user-agent': 'wrk/4.2',
  };
  return {
    requestId: 'r-12345678',
    method: 'GET',
    rawPath: '/runtime/models/x/hello',
    startedAt: performance.now(),
    service: 'models',
    route,
    principal: null,
    span: NO_SPAN,
    deployment: 'd',
    upstreamMs: 1.5,
    requestBytes: -1,
    responseBytes: -1,
    failure: null,
    req: { headers, socket: { remoteAddress: '127.0.0.1' } },
    res,
  } as unknown as RequestContext & { res: EventEmitter };
}

/** CPU µs per request of `work`, median of REPS. */
function cpuPerRequest(work: (ctx: RequestContext & { res: EventEmitter }) => void): number {
  const runs: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    const start = process.cpuUsage();
    for (let i = 0; i < ITERATIONS; i++) work(fakeContext());
    const used = process.cpuUsage(start);
    runs.push((used.user + used.system) / ITERATIONS);
  }
  return runs.sort((a, b) => a - b)[Math.floor(REPS / 2)] as number;
}

function observed(tracing: Tracing) {
  const metrics = createMetrics();
  const observer = createRequestObserver(metrics, tracing);
  const inFlight = metrics.gauge({ name: 'bench_in_flight', help: 'bench', labels: ['deployment'] }).labels('d');
  return (ctx: RequestContext & { res: EventEmitter }) => {
    observer.begin(ctx);
    inFlight.inc();
    const span = tracing.child('proxy', ctx.span, SpanKind.CLIENT, { 'meshgate.deployment': 'd' });
    tracing.headersFor(span);
    inFlight.dec();
    if (span !== ctx.span) tracing.end(span);
    observer.end(ctx);
  };
}

const sink = { enabled: true, write: (_line: string) => {} };
const accessLine = (ctx: RequestContext & { res: EventEmitter }) => {
  createAccessLogStage(sink).run(ctx);
  ctx.res.emit('close');
};
// Export failures (nothing listens on port 9) are counted in a registry of the bench's own, their log lines dropped.
const tracingDeps = { metrics: createMetrics(), logger: pino({ enabled: false }) };
const exporting = await createTracing(
  configSchema.parse({ tracing: { otlpEndpoint: 'http://127.0.0.1:9/v1/traces', exportDelayMs: 60_000 } }),
  tracingDeps,
);
const figures = {
  peer_access_line_us: cpuPerRequest(accessLine),
  observability_export_off_us: cpuPerRequest(observed(await createTracing(configSchema.parse({}), tracingDeps))),
  observability_export_on_us: cpuPerRequest(observed(exporting)),
};
console.log(JSON.stringify({ iterations: ITERATIONS, reps: REPS, ...figures }, null, 2));
console.log(
  `export off: ${(figures.observability_export_off_us / figures.peer_access_line_us).toFixed(2)}× the access line`,
);
process.exit(0);
