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

test("a deleted deployment's series leave, and its requests still in flight do not bring them back", async (t) => {
  const metrics = createMetrics();
  const tracing = await createTracing(configSchema.parse({}), { metrics, logger: pino({ level: 'silent' }) });
  t.after(() => tracing.close());
  const observer = createRequestObserver(metrics, tracing);
  for (const [deployment, status] of [
    ['d-gone', 200],
    ['d-gone', 200],
    ['d-kept', 200],
    [null, 404],
  ] as const)
    observer.end(ended(deployment, status));
  assert.equal((await countsOf(await metrics.registry.metrics())).filter((l) => l.includes('d-gone')).length, 1);

  metrics.histogram(REQUEST_DURATION).remove('deployment', 'd-gone');
  // Requests admitted before the delete, ending after it: a status class seen before and one never seen.
  observer.end(ended('d-gone', 200));
  observer.end(ended('d-gone', 502));
  observer.end(ended('d-kept', 200));
  const count = 'meshgate_http_request_duration_seconds_count{service="apps",route="unmatched",status_class=';
  assert.deepEqual(await countsOf(await metrics.registry.metrics()), [
    `${count}"2xx",deployment="d-kept"} 2`,
    `${count}"4xx",deployment=""} 1`,
  ]);
});
