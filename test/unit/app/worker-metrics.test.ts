/**
 * The primary's sum of its workers' metrics (`WorkersMetrics`) over the real owner link, with a real node:cluster
 * worker: a forgotten deployment does not come back into the sum through the last answer of a worker that exits
 * after the delete, whether that answer was stored before the delete or read before it and stored after.
 */
import assert from 'node:assert/strict';
import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { WorkersMetrics } from '../../../app/worker-metrics.ts';
import { PrimaryLink } from '../../../gateway/process/cluster-link.ts';

const WORKER = fileURLToPath(new URL('../../helpers/metrics-worker.ts', import.meta.url));

/** A primary link with one metrics worker attached, answering. */
async function primaryWithWorker(t: { after(fn: () => void | Promise<void>): void }) {
  cluster.setupPrimary({ exec: WORKER, execArgv: ['--import', 'tsx'], silent: true });
  const link = new PrimaryLink();
  const worker: Worker = cluster.fork();
  link.attach(worker);
  t.after(async () => {
    if (worker.isDead()) return;
    const exited = once(worker, 'exit');
    worker.process.kill('SIGKILL');
    await exited;
  });
  const [ready] = await once(worker, 'message');
  assert.equal(ready, 'metrics-worker-ready');
  return { link, worker };
}

/** Kills the worker; resolves once the link has told its exit listeners (they were attached first). */
async function exitOf(worker: Worker): Promise<void> {
  const exited = once(worker, 'exit');
  worker.process.kill('SIGKILL');
  await exited;
}

const deploymentsIn = (text: string) =>
  [...new Set([...text.matchAll(/^meshgate_http_request_duration_seconds_count\{[^}]*deployment="([^"]*)"/gm)])]
    .map((m) => m[1])
    .sort();

test('a deployment forgotten after a scrape stays out of the sum when that worker exits', async (t) => {
  const { link, worker } = await primaryWithWorker(t);
  const metrics = new WorkersMetrics(link, new Registry());
  assert.deepEqual(deploymentsIn(await metrics.render()), ['gone', 'kept']);
  metrics.forgetDeparted('deployment', 'gone');
  await exitOf(worker);
  assert.deepEqual(deploymentsIn(await metrics.render()), ['kept'], 'the exited worker still counts, without gone');
});

test('a scrape read before the forget and stored after it does not bring the deployment back', async (t) => {
  const { link, worker } = await primaryWithWorker(t);
  const metrics = new WorkersMetrics(link, new Registry());
  // The scrape's question is on its way to the worker when the delete is heard: its answer is stored after.
  const scrape = metrics.render();
  metrics.forgetDeparted('deployment', 'gone');
  assert.deepEqual(deploymentsIn(await scrape), ['gone', 'kept'], 'that scrape was read before the delete');
  await exitOf(worker);
  assert.deepEqual(deploymentsIn(await metrics.render()), ['kept']);
});
