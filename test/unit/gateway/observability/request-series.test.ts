import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { configSchema } from '../../../../gateway/config/schema.ts';
import type { RequestContext } from '../../../../gateway/http/context.ts';
import { createMetrics } from '../../../../gateway/observability/metrics.ts';
import { createRequestObserver, REQUEST_DURATION } from '../../../../gateway/observability/request.ts';
import { createTracing } from '../../../../gateway/observability/tracing.ts';

/** Just what the observer's `end` reads of a request. */
const ended = (deployment: string | null, status: number) =>
  ({
    service: 'apps',
    route: null,
    deployment,
    startedAt: performance.now(),
    res: { statusCode: status },
  }) as unknown as RequestContext;

const countsOf = async (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('meshgate_http_request_duration_seconds_count'))
    .sort();

const COUNT = 'meshgate_http_request_duration_seconds_count{service="apps",route="unmatched",status_class=';

async function observed(t: { after(fn: () => Promise<void>): void }) {
  const metrics = createMetrics();
  const tracing = await createTracing(configSchema.parse({}), { metrics, logger: pino({ level: 'silent' }) });
  t.after(() => tracing.close());
  return { metrics, observer: createRequestObserver(metrics, tracing) };
}

test("a deleted deployment's series leave, and its requests still in flight do not bring them back", async (t) => {
  const { metrics, observer } = await observed(t);
  for (const [deployment, status] of [
    ['d-gone', 200],
    ['d-gone', 200],
    ['d-kept', 200],
    [null, 404],
  ] as const)
    observer.end(ended(deployment, status));
  assert.equal((await countsOf(await metrics.registry.metrics())).filter((l) => l.includes('d-gone')).length, 1);

  // Requests admitted before the delete, ending after it: a status class seen before and one never seen.
  const inFlight = [ended('d-gone', 200), ended('d-gone', 502), ended('d-kept', 200)];
  metrics.histogram(REQUEST_DURATION).remove('deployment', 'd-gone');
  for (const ctx of inFlight) observer.end(ctx);
  assert.deepEqual(await countsOf(await metrics.registry.metrics()), [
    `${COUNT}"2xx",deployment="d-kept"} 2`,
    `${COUNT}"4xx",deployment=""} 1`,
  ]);
});

test('an id deleted and then admitted again (re-created) counts again; its old requests still do not', async (t) => {
  const { metrics, observer } = await observed(t);
  observer.end(ended('d-again', 200));
  const before = ended('d-again', 200);
  metrics.histogram(REQUEST_DURATION).remove('deployment', 'd-again');
  // Arrived after the delete and admitted to the id: the deployment exists again.
  observer.end(ended('d-again', 201));
  observer.end(before);
  observer.end(ended('d-again', 500));
  assert.deepEqual(await countsOf(await metrics.registry.metrics()), [
    `${COUNT}"2xx",deployment="d-again"} 1`,
    `${COUNT}"5xx",deployment="d-again"} 1`,
  ]);
});

test('the marks of deleted deployments are bounded: the oldest is let go', async (t) => {
  const { metrics, observer } = await observed(t);
  const duration = metrics.histogram(REQUEST_DURATION);
  const oldest = ended('d-0', 200);
  const newest = ended('d-1024', 200);
  // Bounded: one more delete than the observer remembers.
  for (let i = 0; i <= 1024; i++) duration.remove('deployment', `d-${i}`);
  observer.end(oldest);
  observer.end(newest);
  assert.deepEqual(
    await countsOf(await metrics.registry.metrics()),
    [`${COUNT}"2xx",deployment="d-0"} 1`],
    'the oldest mark was dropped, the newest still holds',
  );
});
