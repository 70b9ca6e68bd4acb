/**
 * Retrieval clients for tests: catalog setup through the real API, an SSE
 * reader (eventsource-parser over an undici stream), and a gRPC reader
 * (Connect's gRPC transport over HTTP/2, TLS verified with the gateway's CA).
 */

import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createParser } from 'eventsource-parser';
import { request as undiciRequest } from 'undici';
import { AUTHZ } from '../../domains/authz/index.ts';
import { RetrievalService } from '../../proto/gen/platform/retrieval/v1/retrieval_pb.ts';
import type { TestGateway } from './gateway.ts';

export type Row = Record<string, unknown>;

/** Creates a dataset through the catalog API as `token`'s user (its owner) and returns the URN. */
export async function createDataset(
  gw: TestGateway,
  token: string,
  body: { name: string; platform: string; properties: Record<string, unknown> },
) {
  const res = await gw.request('POST', '/api/catalog/datasets/', { token, json: body });
  if (res.status !== 201) throw new Error(`dataset create failed: ${res.status} ${res.text}`);
  return res.json as string;
}

/** Creates a catalog secret as `token`'s user (its owner) and returns its URN, for dataset properties to reference. */
export async function createSecret(gw: TestGateway, token: string, name: string, value: string): Promise<string> {
  const res = await gw.request('POST', '/api/catalog/secrets/', { token, json: { name, value } });
  if (res.status !== 201) throw new Error(`secret create failed: ${res.status} ${res.text}`);
  return res.json as string;
}

export function grantViewer(gw: TestGateway, urn: string, userId: string): void {
  gw.gateway.deps.services
    .get(AUTHZ)
    .write([
      { subject: { namespace: 'user', id: userId }, relation: 'viewer', object: { namespace: 'dataset', id: urn } },
    ]);
}

export interface SseEvent {
  event: string;
  data: any;
}

export interface SseResult {
  status: number;
  contentType: string;
  comments: string[];
  events: SseEvent[];
  json: any;
}

/** SSE events of a response body, one at a time as they are parsed (eventsource-parser); comments go to `onComment`. */
export async function* sseEvents(
  body: AsyncIterable<Uint8Array>,
  onComment?: (comment: string) => void,
): AsyncGenerator<SseEvent> {
  const pending: SseEvent[] = [];
  const parser = createParser({
    onEvent: (m) => pending.push({ event: m.event ?? 'message', data: JSON.parse(m.data) }),
    onComment,
  });
  for await (const piece of body) {
    parser.feed(Buffer.from(piece).toString('utf8'));
    yield* pending.splice(0);
  }
}

/** Drains a job's SSE stream; `stopAfterChunks` disconnects after that many chunk events. */
export function readSse(
  gw: TestGateway,
  jobId: string,
  token: string,
  stopAfterChunks = Number.POSITIVE_INFINITY,
): Promise<SseResult> {
  return readSseAt(gw, `/api/retrieval/jobs/${jobId}/stream`, token, stopAfterChunks);
}

/** readSse on any path, e.g. a job's stream through the mesh (/api/mesh/{fed}/retrieval/jobs/{id}/stream). */
export async function readSseAt(
  gw: TestGateway,
  path: string,
  token: string,
  stopAfterChunks = Number.POSITIVE_INFINITY,
): Promise<SseResult> {
  const controller = new AbortController();
  const res = await undiciRequest(`${gw.gateway.httpsUrl}${path}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    dispatcher: gw.agent,
    signal: controller.signal,
  });
  const contentType = String(res.headers['content-type'] ?? '');
  if (!contentType.startsWith('text/event-stream')) {
    const text = await res.body.text();
    return { status: res.statusCode, contentType, comments: [], events: [], json: text ? JSON.parse(text) : undefined };
  }
  const result: SseResult = { status: res.statusCode, contentType, comments: [], events: [], json: undefined };
  let chunks = 0;
  try {
    for await (const event of sseEvents(res.body, (comment) => result.comments.push(comment))) {
      result.events.push(event);
      if (event.event === 'chunk' && ++chunks >= stopAfterChunks) {
        controller.abort();
        break;
      }
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  }
  return result;
}

export function sseRows(result: Pick<SseResult, 'events'>): Row[] {
  return result.events.filter((e) => e.event === 'chunk').flatMap((e) => e.data.data as Row[]);
}

/**
 * The `grpc_protocol` a job is created with to be read by platform.retrieval.v1 StreamData (Arrow Flight is the
 * default).
 */
export const V1 = 'platform.retrieval.v1';

export function grpcClient(gw: TestGateway) {
  const transport = createGrpcTransport({ baseUrl: gw.url, nodeOptions: { ca: gw.gateway.caPem } });
  return createClient(RetrievalService, transport);
}

export interface GrpcResult {
  chunks: { sequence: number; rows: Row[]; metadata: Record<string, string>; final: boolean }[];
}

/** Reads a gRPC job's stream with the token of its `grpc` block. */
export async function readGrpc(
  gw: TestGateway,
  job: { job_id: string; grpc: { token: string } },
  fromSequence = 0,
): Promise<GrpcResult> {
  const out: GrpcResult = { chunks: [] };
  for await (const chunk of grpcClient(gw).streamData({
    jobId: job.job_id,
    token: job.grpc.token,
    fromSequence: BigInt(fromSequence),
  })) {
    const rows = chunk.final ? [] : (JSON.parse(Buffer.from(chunk.payload).toString('utf8')) as Row[]);
    out.chunks.push({ sequence: Number(chunk.sequence), rows, metadata: chunk.metadata, final: chunk.final });
  }
  return out;
}

export function grpcRows(result: GrpcResult): Row[] {
  return result.chunks.flatMap((c) => c.rows);
}

/** Creates a job and returns its body (asserting 201). */
export async function createJob(gw: TestGateway, token: string, body: Record<string, unknown>) {
  const res = await gw.request('POST', '/api/retrieval/jobs', { token, json: body });
  if (res.status !== 201) throw new Error(`job create failed: ${res.status} ${res.text}`);
  return res.json;
}

/** Polls `check` every 50 ms for up to 5 s. */
export async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}
