/**
 * `/metrics` under `serve --workers 2`: the primary binds the admin listener, and a scrape combines every worker's
 * registry with its own. Requests served by either worker are all counted, process metrics cover every process,
 * state read from the shared database (jobs by state) is counted once, not once per process, and a reload that
 * replaces every worker does not make a counter fall (Prometheus would read a reset).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { request } from 'undici';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { parsePrometheus, type Sample, total } from '../../../helpers/peers/prometheus.ts';
import { adminToken, connection, freePort, servedBy, workerPids, workersScratch } from '../../../helpers/workers.ts';

async function scrape(adminUrl: string): Promise<Sample[]> {
  const res = await request(`${adminUrl}/metrics`);
  assert.equal(res.statusCode, 200);
  return parsePrometheus(await res.body.text());
}

test('a scrape of the primary sums what each worker served and counts database state once', async (t) => {
  const { dir, serve } = workersScratch(t, 'meshgate-metrics-');
  const served = await serve(2, { PLATFORM_ADMIN_PORT: String(await freePort()) });
  const started = JSON.parse(await served.waitForLine(/"msg":"primary started/)) as { admin: string };
  const ping = { service: 'api', route: '/ping', status_class: '2xx' };
  const before = total(await scrape(started.admin), 'meshgate_http_request_duration_seconds_count', ping);

  // New connections until both workers have served some of the pings.
  const byWorker = new Map<number, number>();
  let pings = 0;
  while (byWorker.size < 2) {
    assert.ok(pings < 40, 'both workers served a connection');
    const conn = connection(served);
    const res = await conn.call('GET', '/api/ping');
    await conn.close();
    assert.equal(res.status, 200);
    pings++;
    const worker = await servedBy(served, res.requestId);
    byWorker.set(worker, (byWorker.get(worker) ?? 0) + 1);
  }
  const token = await adminToken(served);
  const conn = connection(served);
  t.after(() => conn.close());
  const ran = await conn.call('POST', '/api/cluster/jobs/run', { token, json: { entrypoint: 'true' } });
  assert.equal(ran.json.status, 'SUCCEEDED', ran.text);

  const after = await scrape(started.admin);
  assert.equal(
    total(after, 'meshgate_http_request_duration_seconds_count', ping) - before,
    pings,
    `every ping counted once, whichever worker served it (${[...byWorker.values()].join(' + ')})`,
  );
  assert.equal(total(after, 'meshgate_jobs', { state: 'SUCCEEDED', runtime: 'local' }), 1, 'one job, counted once');
  // Every process's memory: the sum of what /proc reads for the primary and its two workers, not one process's.
  const pids = [served.child.pid as number, ...workerPids(served.child.pid as number)];
  assert.equal(pids.length, 3);
  const resident = pids.map(
    (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024,
  );
  const scraped = total(after, 'process_resident_memory_bytes', {});
  const sum = resident.reduce((a, b) => a + b, 0);
  assert.ok(scraped > Math.max(...resident) * 1.5 && Math.abs(scraped - sum) < sum * 0.25, `${scraped} vs ${resident}`);
  assert.ok(total(after, 'process_cpu_seconds_total', {}) > 0);
  assert.ok(after.some((sample) => sample.name === 'nodejs_eventloop_lag_seconds'));

  await execMeshgate(['reload', '--data-dir', dir]);
  await served.waitForLine(/^meshgate reloaded \(2 workers replaced\)$/);
  assert.ok(
    workerPids(served.child.pid as number).every((pid) => !pids.includes(pid)),
    'every worker was replaced',
  );
  const reloaded = await scrape(started.admin);
  assert.equal(
    total(reloaded, 'meshgate_http_request_duration_seconds_count', ping) - before,
    pings,
    'the replaced workers still count what they served',
  );
  assert.ok(total(reloaded, 'process_cpu_seconds_total', {}) >= total(after, 'process_cpu_seconds_total', {}));
  assert.equal(total(reloaded, 'meshgate_jobs', { state: 'SUCCEEDED', runtime: 'local' }), 1);
});
