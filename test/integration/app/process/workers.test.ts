/**
 * `meshgate serve --workers N`: the real processes. Workers share the port
 * and serve; a worker killed under load is replaced (the failed requests are
 * counted and bounded); a reload under a steady load fails nothing and
 * resets no stream; a job submitted on one worker is cancelled on another;
 * SIGTERM stops every process. Every worker has glibc's malloc settings.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { connect as connectHttp2 } from 'node:http2';
import { join } from 'node:path';
import { test } from 'node:test';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { Agent, request } from 'undici';
import { RetrievalService } from '../../../../proto/gen/platform/retrieval/v1/retrieval_pb.ts';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { alive, jobProcesses, MARKER } from '../../../helpers/jobs.ts';
import { V1 } from '../../../helpers/retrieval.ts';
import { sampleRows, writeAllFormats } from '../../../helpers/retrieval-fixtures.ts';
import { startModelServer } from '../../../helpers/upstreams.ts';
import {
  adminToken,
  connection,
  freePort,
  type Served,
  servedBy,
  steadyLoad,
  untilServed,
  workerPids,
  workersScratch,
} from '../../../helpers/workers.ts';

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test(
  'two workers share the port and serve; the pid file is 0600 and refuses a second primary; ' + 'SIGTERM stops all',
  async (t) => {
    const { dir, serve } = workersScratch(t);
    const served = await serve(2);
    const primary = served.child.pid as number;
    const workers = workerPids(primary);
    assert.equal(workers.length, 2, 'two workers');
    // glibc's malloc settings reach every worker, the mmap threshold with the trim threshold it belongs with.
    for (const pid of workers) {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      for (const setting of ['MALLOC_ARENA_MAX=1', 'MALLOC_TRIM_THRESHOLD_=131072', 'MALLOC_MMAP_THRESHOLD_=4194304'])
        assert.ok(environ.includes(setting), `worker ${pid}: ${setting}`);
    }
    assert.equal(statSync(join(dir, 'meshgate.pid')).mode & 0o777, 0o600);
    // New connections are spread over the workers (by address hash, or in turn): a few reach both.
    const seen = new Set<number>();
    for (let i = 0; i < 24 && seen.size < 2; i++) {
      const conn = connection(served);
      const res = await conn.call('GET', '/api/ping');
      assert.equal(res.status, 200);
      seen.add(await servedBy(served, res.requestId));
      await conn.close();
    }
    assert.deepEqual([...seen].sort(), [...workers].sort(), 'each worker served a connection');
    await assert.rejects(
      execMeshgate(['serve', '--data-dir', dir, '--https-port', '0', '--workers', '2']),
      (error: { code: number; stderr: string }) => {
        assert.equal(error.code, 1);
        assert.match(error.stderr, new RegExp(`another meshgate primary \\(pid ${primary}\\) serves`));
        return true;
      },
    );
    assert.equal(await served.stop('SIGTERM'), 0);
    assert.match(served.output(), /meshgate stopped \(SIGTERM\)/);
    for (const pid of [primary, ...workers]) await until(() => !alive(pid), `process ${pid} to end`);
    assert.throws(() => statSync(join(dir, 'meshgate.pid')), /ENOENT/, 'the pid file is removed');
  },
);

test(
  'a worker killed with SIGKILL under load is replaced; ' + 'the failed requests are few and the gateway serves again',
  async (t) => {
    const served = await workersScratch(t).serve(2);
    const primary = served.child.pid as number;
    const [victim] = workerPids(primary);
    const load = steadyLoad(served, { connections: 4, streams: 4, maxRequests: 200_000, maxMs: 60_000 });
    await untilServed(load.result, 200);
    process.kill(victim as number, 'SIGKILL');
    await until(
      () => workerPids(primary).length === 2 && !workerPids(primary).includes(victim as number),
      'a replacement worker',
    );
    await served.waitForLine(/"msg":"worker serving"/);
    await untilServed(load.result, 500);
    const result = await load.stop();
    t.diagnostic(`SIGKILL under load: ${result.ok} answered, ${result.failed} failed (${result.resets} resets)`);
    // At most what was in flight on the killed worker's connections: every stream of every connection.
    assert.ok(result.failed <= 16, `failed ${result.failed}: ${result.errors.join('; ')}`);
    const conn = connection(served);
    assert.equal((await conn.call('GET', '/api/ping')).status, 200, 'a new connection is served');
    await conn.close();
  },
);

test(
  'a reload under a steady HTTP/2 and HTTP/1.1 load replaces every worker; ' + 'no request fails, no stream resets',
  async (t) => {
    const { dir, serve } = workersScratch(t);
    const served = await serve(2);
    const primary = served.child.pid as number;
    const before = workerPids(primary);
    const load = steadyLoad(served, { connections: 4, streams: 4, http1: 4, maxRequests: 200_000, maxMs: 90_000 });
    await untilServed(load.result, 200);
    const { stdout } = await execMeshgate(['reload', '--data-dir', dir]);
    assert.match(stdout, new RegExp(`signalled the primary \\(pid ${primary}\\)`));
    assert.match(stdout, /^meshgate reloaded \(2 workers replaced\)$/m, 'the command waited for the outcome');
    await served.waitForLine(/^meshgate reloaded \(2 workers replaced\)$/);
    await untilServed(load.result, 200);
    const result = await load.stop();
    t.diagnostic(`reload under load: ${result.ok} answered, ${result.failed} failed, ${result.resets} reset`);
    assert.equal(result.failed, 0, result.errors.join('; '));
    assert.equal(result.resets, 0);
    const after = workerPids(primary);
    assert.equal(after.length, 2);
    assert.ok(
      after.every((pid) => !before.includes(pid)),
      'every worker was replaced',
    );
  },
);

test('meshgate reload without a running primary says so and fails', async (t) => {
  const { dir } = workersScratch(t);
  await assert.rejects(execMeshgate(['reload', '--data-dir', dir]), (error: { code: number; stderr: string }) => {
    assert.equal(error.code, 1);
    assert.match(error.stderr, /no running primary found/);
    return true;
  });
});

test('a job submitted through one worker is cancelled and read through another; run waits on any worker', async (t) => {
  const served = await workersScratch(t).serve(2);
  const token = await adminToken(served);
  const first = connection(served);
  t.after(() => first.close());
  const submitted = await first.call('POST', '/api/cluster/jobs/submit', { token, json: { entrypoint: 'sleep 60' } });
  assert.equal(submitted.status, 201, submitted.text);
  const jobId = submitted.json.job_id as string;
  const submitter = await servedBy(served, submitted.requestId);
  const other = await connectionOnAnotherWorker(served, submitter, t);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const status = await other.call('GET', `/api/cluster/jobs/${jobId}/status`, { token });
    if (status.json.status === 'RUNNING') break;
    assert.ok(Date.now() < deadline, `the job did not start: ${status.text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const cancelled = await other.call('POST', `/api/cluster/jobs/${jobId}/cancel`, { token });
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.notEqual(await servedBy(served, cancelled.requestId), submitter, 'cancelled on the other worker');
  assert.equal(cancelled.json.status, 'STOPPED');
  const logs = await other.call('GET', `/api/cluster/jobs/${jobId}/logs`, { token });
  assert.equal(logs.status, 200, 'logs read on a worker that did not start the job');
  await until(() => jobProcesses(jobId).length === 0, 'the job process to end');
  // `run` waits on a worker for a job the primary runs: it ends with the job, its marker read from the log.
  const ran = await other.call('POST', '/api/cluster/jobs/run', {
    token,
    json: { entrypoint: `echo '${MARKER}{"answer":42}'` },
  });
  assert.equal(ran.status, 200, ran.text);
  assert.equal(ran.json.status, 'SUCCEEDED', ran.text);
  assert.deepEqual(ran.json.result, { answer: 42 });
});

test('a retrieval stream token handed out by one worker is honoured by every worker', async (t) => {
  const { dir, serve } = workersScratch(t);
  const files = writeAllFormats(dir, 'rows', sampleRows(40));
  const served = await serve(2, { PLATFORM_RETRIEVAL_FS_ROOTS: dir }, join(dir, 'data'));
  const token = await adminToken(served);
  const conn = connection(served);
  t.after(() => conn.close());
  const dataset = await conn.call('POST', '/api/catalog/datasets/', {
    token,
    json: { name: 'rows', platform: 'file', properties: { path: files.jsonl } },
  });
  assert.equal(dataset.status, 201, dataset.text);
  const job = await conn.call('POST', '/api/retrieval/jobs', {
    token,
    json: { dataset_urn: dataset.json, transport: 'grpc', grpc_protocol: V1 },
  });
  assert.equal(job.status, 201, job.text);
  const readers = new Set<number>();
  // Each read opens its own connection, until both workers have served one (each read must succeed).
  for (let i = 0; i < 24 && readers.size < 2; i++) {
    const requestId = randomUUID();
    const client = createClient(
      RetrievalService,
      createGrpcTransport({ baseUrl: served.base, nodeOptions: { ca: served.ca } }),
    );
    let rows = 0;
    const chunks = client.streamData(
      { jobId: job.json.job_id, token: job.json.grpc.token },
      { headers: { 'x-request-id': requestId } },
    );
    for await (const chunk of chunks)
      if (!chunk.final) rows += (JSON.parse(Buffer.from(chunk.payload).toString('utf8')) as unknown[]).length;
    assert.equal(rows, 40, `read ${i}`);
    readers.add(await servedBy(served, requestId));
  }
  assert.equal(readers.size, 2, 'both workers served the stream with the token one of them issued');
});

test(
  'a legacy port asked for on a worker is opened by the primary; ' + 'its refusal crosses back with its reason',
  async (t) => {
    const model = await startModelServer(t);
    const served = await workersScratch(t).serve(2, { PLATFORM_SERVING_LEGACY_PORTS: 'true' });
    const token = await adminToken(served);
    const conn = connection(served);
    t.after(() => conn.close());
    const port = await freePort();
    const created = await conn.call('POST', '/api/serving/deployments', {
      token,
      json: { kind: 'model', name: 'm', upstream: model.url, legacy_port: port },
    });
    assert.equal(created.status, 201, created.text);
    const primary = served.child.pid as number;
    assert.ok(listenersOf(primary).includes(port), 'the primary holds the legacy port');
    const agent = new Agent({ connect: { ca: served.ca } });
    t.after(() => agent.close());
    const viaLegacy = await request(`https://localhost:${port}/v1/models`, {
      dispatcher: agent,
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(viaLegacy.statusCode, 200, await viaLegacy.body.text());
    // The upstream's own port is taken by another process: the primary's bind fails, and the worker answers with it.
    const busy = await conn.call('POST', '/api/serving/deployments', {
      token,
      json: { kind: 'tool', name: 'busy', upstream: model.url, legacy_port: Number(new URL(model.url).port) },
    });
    assert.equal(busy.status, 409, busy.text);
    assert.equal(busy.json.detail.reason, 'legacy_port_unavailable');
  },
);

/** The TCP ports a process listens on (its sockets in /proc/net/tcp{,6} in state LISTEN). */
function listenersOf(pid: number): number[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        return [/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? ''];
      } catch {
        return [];
      }
    }),
  );
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((cols) => cols[3] === '0A' && inodes.has(cols[9] ?? ''))
      .map((cols) => Number.parseInt(cols[1]?.split(':')[1] ?? '', 16)),
  );
}

test("a retrieval cancel taken by one worker ends the job's stream on another", async (t) => {
  const { dir, serve } = workersScratch(t);
  const path = join(dir, 'big.jsonl');
  writeFileSync(
    path,
    Array.from({ length: 200_000 }, (_, i) => JSON.stringify({ id: `r${i}`, note: `row ${i}` })).join('\n'),
  );
  const served = await serve(2, { PLATFORM_RETRIEVAL_FS_ROOTS: dir }, join(dir, 'data'));
  const token = await adminToken(served);
  // node:http2 keeps HTTP/2 flow control: a stream this test stops reading stops the sender, so the job is still
  // streaming when the cancel arrives.
  const session = connectHttp2(served.base, { ca: served.ca });
  t.after(() => session.close());
  const http2Call = (headers: Record<string, string>) =>
    session.request({ 'x-request-id': randomUUID(), authorization: `Bearer ${token}`, ...headers });
  const ping = http2Call({ ':path': '/api/ping', 'x-request-id': randomUUID() });
  const pingId = ping.sentHeaders['x-request-id'] as string;
  ping.resume();
  await once(ping, 'end');
  const cancelling = await connectionOnAnotherWorker(served, await servedBy(served, pingId), t);
  const dataset = await cancelling.call('POST', '/api/catalog/datasets/', {
    token,
    json: { name: 'big', platform: 'file', properties: { path } },
  });
  assert.equal(dataset.status, 201, dataset.text);
  const job = await cancelling.call('POST', '/api/retrieval/jobs', {
    token,
    json: { dataset_urn: dataset.json, transport: 'sse' },
  });
  assert.equal(job.status, 201, job.text);
  const stream = http2Call({ ':path': `/api/retrieval/jobs/${job.json.job_id}/stream`, accept: 'text/event-stream' });
  stream.setEncoding('utf8');
  let text = '';
  await new Promise<void>((resolve) => {
    const onData = (piece: string) => {
      text += piece;
      if (!text.includes('event: chunk')) return;
      stream.off('data', onData);
      stream.pause();
      resolve();
    };
    stream.on('data', onData);
  });
  // The cancel answers once every worker has aborted the job's streams, so reading on now meets the abort.
  const cancel = await cancelling.call('POST', `/api/retrieval/jobs/${job.json.job_id}/cancel`, { token });
  assert.equal(cancel.status, 200, cancel.text);
  assert.equal(cancel.json.status, 'CANCELED');
  stream.on('data', (piece: string) => {
    text += piece;
  });
  stream.resume();
  await once(stream, 'end');
  assert.match(text.slice(-2000), /event: error\ndata: .*retrieval_job_canceled/);
  assert.doesNotMatch(text.slice(-2000), /event: complete/);
  // Closed here, not in an after hook: those run in the order registered, so the gateway would be killed first and
  // a frame this client still sends (a WINDOW_UPDATE as it reads) would meet a dead socket: a reset, uncaught.
  session.close();
  await once(session, 'close');
});

/** A connection served by a worker other than `worker` (each known by a ping's access line). */
async function connectionOnAnotherWorker(served: Served, worker: number, t: { after(fn: () => unknown): void }) {
  for (let i = 0; i < 24; i++) {
    const conn = connection(served);
    t.after(() => conn.close());
    if ((await servedBy(served, (await conn.call('GET', '/api/ping')).requestId)) !== worker) return conn;
  }
  throw new Error('no connection reached another worker');
}
