/**
 * The hand-written DoGet stream (transports/grpc-frames.ts) read by
 * Connect's own Node gRPC client, which decodes every FlightData with
 * protobuf-es: the schema, record batches that apache-arrow reads back to
 * the rows SSE gives, batches carrying the gate audit beside the same
 * header and body, and the footer; the job COMPLETED. The attacker's side
 * of the replaced handler: a request past its size limit, two request
 * messages, a compressed ticket, a JSON codec and another protocol, each
 * with a status and no rows.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { create, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { encodeEnvelope } from '@connectrpc/connect/protocol';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { tableFromIPC } from 'apache-arrow';
import {
  type FlightData,
  FlightService,
  TicketSchema,
} from '../../../../../proto/gen/arrow/flight/protocol/Flight_pb.ts';
import { ipcStreamOf } from '../../../../helpers/flight-frames.ts';
import { startTestGateway } from '../../../../helpers/gateway.ts';
import { createDataset, createJob, grantViewer, readSse, sseRows } from '../../../../helpers/retrieval.ts';
import { CLEARANCE_ROWS, sampleRows, writeAllFormats } from '../../../../helpers/retrieval-fixtures.ts';

async function world(t: { after(fn: () => unknown): void }) {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-flight-frames-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
  const admin = await gw.adminToken();
  const sample = await createDataset(gw, admin, {
    name: 'sample',
    platform: 'file',
    properties: { path: writeAllFormats(root, 'sample', sampleRows()).jsonl },
  });
  const gated = await createDataset(gw, admin, {
    name: 'clearance',
    platform: 'file',
    properties: { path: writeAllFormats(root, 'clearance', CLEARANCE_ROWS).jsonl },
  });
  const gate = { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } };
  const bound = await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(gated)}/gate`, {
    token: admin,
    json: gate,
  });
  assert.equal(bound.status, 200);
  const nodeOptions = { ca: gw.gateway.caPem };
  const grpc = createClient(FlightService, createGrpcTransport({ baseUrl: gw.url, nodeOptions }));
  return { gw, admin, sample, gated, grpc, nodeOptions };
}

const ticketOf = (job: { job_id: string; grpc: { token: string } }) =>
  Buffer.from(JSON.stringify({ job_id: job.job_id, token: job.grpc.token }));

async function messagesOf(stream: AsyncIterable<FlightData>): Promise<FlightData[]> {
  const messages: FlightData[] = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

const metadataOf = (message: FlightData) =>
  message.appMetadata.length > 0 ? JSON.parse(Buffer.from(message.appMetadata).toString()) : null;

test('Connect decodes every hand-written FlightData: the rows SSE gives, the footer, the job COMPLETED', async (t) => {
  const { gw, admin, sample, grpc } = await world(t);
  const job = await createJob(gw, admin, { dataset_urn: sample, transport: 'grpc', batch_size: 2 });
  const messages = await messagesOf(grpc.doGet({ ticket: ticketOf(job) }));
  const footer = messages.pop() as FlightData;
  assert.equal(footer.dataHeader.length + footer.dataBody.length, 0);
  const rows = sampleRows();
  assert.deepEqual(metadataOf(footer), { filtered: false, rows: rows.length, chunks: Math.ceil(rows.length / 2) });
  assert.ok(messages.every((m) => m.appMetadata.length === 0));
  const table = tableFromIPC(ipcStreamOf(messages));
  assert.equal(table.batches.length, Math.ceil(rows.length / 2));
  const sse = await readSse(gw, (await createJob(gw, admin, { dataset_urn: sample, transport: 'sse' })).job_id, admin);
  assert.deepEqual(
    table.toArray().map((r) => r.toJSON()),
    sseRows(sse),
  );
  const status = await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: admin });
  assert.equal(status.json.status, 'COMPLETED');
});

test('a gated read: each batch carries the gate audit as app_metadata beside its header and body', async (t) => {
  const { gw, gated, grpc } = await world(t);
  const user = await gw.userToken('reader-u', { attributes: { clearance: 'U' } });
  grantViewer(gw, gated, user.id);
  const job = await createJob(gw, user.token, { dataset_urn: gated, transport: 'grpc', batch_size: 1 });
  const messages = await messagesOf(grpc.doGet({ ticket: ticketOf(job) }));
  const footer = messages.pop() as FlightData;
  const [schema, ...batches] = messages;
  assert.equal(metadataOf(schema as FlightData), null);
  assert.equal(batches.length, 3);
  const audit = { filtered: true, included: null, redacted: null, total: null, gate: null };
  // The audit so far (the withheld rows come last, so the batches have met none); the footer's is the whole read's.
  for (const batch of batches)
    assert.deepEqual(metadataOf(batch), { gate_audit: { ...audit, filtered: false }, filtered: false });
  assert.deepEqual(metadataOf(footer).gate_audit, audit);
  const table = tableFromIPC(ipcStreamOf(messages));
  assert.deepEqual(
    table.toArray().map((r) => r.toJSON()),
    CLEARANCE_ROWS.slice(0, 3),
  );
});

test('the replaced handler refuses what Connect would: oversized, repeated or undecodable requests', async (t) => {
  const { gw, admin, sample, grpc, nodeOptions } = await world(t);
  const refused = async (call: () => Promise<unknown>) => {
    try {
      await call();
    } catch (error) {
      return ConnectError.from(error);
    }
    assert.fail('the call was answered');
  };
  const job = await createJob(gw, admin, { dataset_urn: sample, transport: 'grpc' });
  // Past 64 KiB the request is not read at all (the token is untouched: it still works afterwards).
  const oversized = await refused(() => messagesOf(grpc.doGet({ ticket: Buffer.alloc(70_000, 0x61) })));
  assert.equal(oversized?.code, Code.ResourceExhausted, String(oversized));
  // JSON and the Connect protocol reach Connect's own handler, which answers UNIMPLEMENTED for DoGet.
  for (const transport of [
    createGrpcTransport({ baseUrl: gw.url, nodeOptions, useBinaryFormat: false }),
    createConnectTransport({ baseUrl: gw.url, nodeOptions, httpVersion: '2' }),
  ]) {
    const other = await refused(() =>
      messagesOf(createClient(FlightService, transport).doGet({ ticket: ticketOf(job) })),
    );
    assert.equal(other?.code, Code.Unimplemented, String(other));
  }
  // Two request messages on a server-streaming method; a gzip-flagged ticket that is not gzip.
  const ticket = toBinary(TicketSchema, create(TicketSchema, { ticket: ticketOf(job) }));
  for (const [body, encoding, code] of [
    [Buffer.concat([encodeEnvelope(0, ticket), encodeEnvelope(0, ticket)]), 'identity', Code.Unimplemented],
    [encodeEnvelope(1, ticket), 'gzip', Code.InvalidArgument],
  ] as const) {
    const res = await fetchGrpc(gw.url, nodeOptions.ca, body, encoding);
    assert.equal(res.headers['grpc-status'] ?? res.trailers['grpc-status'], String(code), JSON.stringify(res));
    assert.equal(res.body.length, 0);
  }
  const got = await messagesOf(grpc.doGet({ ticket: ticketOf(job) }));
  assert.ok(got.length > 2, 'the token was not spent by the refused calls');
});

/** One raw gRPC call over HTTP/2: the response's headers, trailers and body. */
async function fetchGrpc(url: string, ca: string, body: Uint8Array, encoding: string) {
  const { connect } = await import('node:http2');
  const session = connect(url, { ca });
  try {
    const stream = session.request({
      ':method': 'POST',
      ':path': '/arrow.flight.protocol.FlightService/DoGet',
      'content-type': 'application/grpc',
      'grpc-encoding': encoding,
      te: 'trailers',
    });
    stream.end(body);
    const headers: Record<string, unknown> = {};
    let trailers: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => Object.assign(headers, h));
    stream.on('trailers', (h) => {
      trailers = h;
    });
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return { headers, trailers, body: Buffer.concat(chunks) };
  } finally {
    session.close();
  }
}
