/**
 * Shared pieces of the source tests (S3, Kafka, Hive, Slack, PostgreSQL): one real peer per test file
 * (started on first use, stopped when the file's tests end), and the
 * "peer goes away mid-stream" check every source must pass: the SSE stream
 * ends with a clear `error` event, the job is FAILED with that reason, and
 * nothing hangs.
 */
import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Socket, connect as tcpConnect } from 'node:net';
import { after } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request as undiciRequest } from 'undici';
import type { TestGateway } from './gateway.ts';
import type { After } from './peers/process.ts';
import { type SseEvent, sseEvents } from './retrieval.ts';

/** Starts the peer on first call and reuses it for the rest of the file. */
export function sharedPeer<T>(start: (t: After) => Promise<T>): () => Promise<T> {
  let peer: Promise<T> | undefined;
  const hooks: (() => unknown)[] = [];
  after(async () => {
    for (const hook of hooks.reverse()) await hook();
  });
  return () => {
    peer ??= start({ after: (fn) => hooks.push(fn) });
    return peer;
  };
}

export interface FailureOutcome {
  rows: number;
  last: { event: string; data: Record<string, unknown> };
  job: { status: string; error: string | null };
}

/**
 * Reads a job's SSE stream; after the first chunk, calls goAway() (stop the
 * peer) and keeps reading to the end, which must come within `withinMs`.
 */
export async function streamThroughOutage(
  gw: TestGateway,
  token: string,
  jobId: string,
  goAway: () => Promise<void>,
  withinMs = 60_000,
): Promise<FailureOutcome> {
  const res = await undiciRequest(`${gw.url}/api/retrieval/jobs/${jobId}/stream`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    dispatcher: gw.agent,
    signal: AbortSignal.timeout(withinMs),
  });
  assert.equal(res.statusCode, 200);
  const events: SseEvent[] = [];
  let rows = 0;
  let pending: Promise<void> | undefined;
  for await (const event of sseEvents(res.body)) {
    events.push(event);
    if (event.event === 'chunk') {
      rows += (event.data.data as unknown[]).length;
      pending ??= goAway();
      await pending;
    }
  }
  assert.ok(pending, 'at least one chunk arrived before the peer went away');
  const last = events.at(-1) as FailureOutcome['last'];
  let job = { status: '', error: null as string | null };
  for (let i = 0; i < 100 && job.status !== 'FAILED'; i++) {
    job = (await gw.request('GET', `/api/retrieval/jobs/${jobId}`, { token })).json;
    if (job.status !== 'FAILED') await sleep(50);
  }
  return { rows, last, job };
}

/** What an attacker-controlled listener on loopback received. */
export interface RecordingListener {
  readonly host: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>` (with a trailing `/` for a Slack API URL, add it). */
  readonly url: string;
  connections(): number;
  /** Every byte received, as latin1 text, to search for a credential. */
  received(): string;
}

/**
 * A TCP listener standing in for a server a caller names: it records every
 * connection and byte. An HTTP request is answered 403 at once (so an S3 or
 * Slack client fails fast, as against a hostile endpoint); any other
 * protocol's first bytes close the connection.
 */
export async function recordingListener(t: After): Promise<RecordingListener> {
  let connections = 0;
  const chunks: Buffer[] = [];
  const server = createServer((socket) => {
    connections++;
    socket.on('error', () => {});
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      head += chunk.toString('latin1');
      if (!/^[A-Z]+ \S+ HTTP\/1\.1\r\n/.test(head)) {
        if (head.length > 0 && !/^[A-Z]/.test(head)) socket.destroy();
        return;
      }
      if (head.includes('\r\n\r\n'))
        socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return {
    host: '127.0.0.1',
    port,
    url: `http://127.0.0.1:${port}`,
    connections: () => connections,
    received: () => Buffer.concat(chunks).toString('latin1'),
  };
}

/** Asserts a job create is refused 422 `option_not_allowed` naming the key, the source and where it was sent. */
export async function assertNotAllowed(
  gw: TestGateway,
  token: string,
  body: Record<string, unknown>,
  key: string,
  source: string,
) {
  const res = await gw.request('POST', '/api/retrieval/jobs', { token, json: body });
  assert.equal(res.status, 422, `${key}: ${res.text}`);
  const { reason, key: named, source: type, in: where } = res.json.detail;
  assert.deepEqual({ reason, key: named, source: type }, { reason: 'option_not_allowed', key, source });
  assert.equal(where, body.options && key in (body.options as object) ? 'options' : 'credential_override');
  return res;
}

/** A loopback TCP proxy in front of a server (moto): counts the connections it accepts and the bytes sent back. */
export async function countingProxy(
  t: After,
  target: string,
): Promise<{ endpoint: string; host: string; accepted: () => number; received: () => number }> {
  const { hostname, port } = new URL(target);
  let accepted = 0;
  let received = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    accepted++;
    const upstream = tcpConnect(Number(port), hostname);
    sockets.add(client).add(upstream);
    upstream.on('data', (chunk: Buffer) => (received += chunk.length));
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { endpoint: `http://${host}`, host, accepted: () => accepted, received: () => received };
}
