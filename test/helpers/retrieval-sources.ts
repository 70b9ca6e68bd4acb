/**
 * Shared pieces of the issue 10 source tests: one real peer per test file
 * (started on first use, stopped when the file's tests end), and the
 * "peer goes away mid-stream" check every source must pass: the SSE stream
 * ends with a clear `error` event, the job is FAILED with that reason, and
 * nothing hangs.
 */
import assert from 'node:assert/strict';
import { after } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import { request as undiciRequest } from 'undici';
import type { TestGateway } from './gateway.ts';
import type { After } from './peers/process.ts';

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
  const events: { event: string; data: Record<string, unknown> }[] = [];
  let rows = 0;
  let pending: Promise<void> | undefined;
  const parser = createParser({
    onEvent: (message) => {
      const data = JSON.parse(message.data);
      events.push({ event: message.event ?? 'message', data });
      if (message.event === 'chunk') {
        rows += (data.data as unknown[]).length;
        pending ??= goAway();
      }
    },
  });
  for await (const piece of res.body) {
    parser.feed(Buffer.from(piece).toString('utf8'));
    if (pending) await pending;
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
