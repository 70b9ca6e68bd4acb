/**
 * A node:cluster worker that answers the primary's metrics scrapes over the real owner link, with request series of
 * two deployments (`gone`, `kept`) and without ever dropping `gone` itself: a worker that has not yet heard of a
 * delete, or whose answer was read before it (test/unit/app/worker-metrics.test.ts).
 */
import { shareWorkerMetrics } from '../../app/worker-metrics.ts';
import { configSchema } from '../../gateway/config/schema.ts';
import { createMetrics } from '../../gateway/observability/metrics.ts';
import { REQUEST_DURATION } from '../../gateway/observability/request.ts';
import { WorkerLink } from '../../gateway/process/cluster-link.ts';

const metrics = createMetrics({ databaseGauges: false });
const duration = metrics.histogram(REQUEST_DURATION);
for (const deployment of ['gone', 'kept']) duration.labels('apps', '/', '2xx', deployment).observe(0.01);
shareWorkerMetrics(configSchema.parse({ admin: { port: 0 } }), new WorkerLink(), metrics);
process.send?.('metrics-worker-ready');
