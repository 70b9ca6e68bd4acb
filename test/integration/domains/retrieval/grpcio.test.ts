/**
 * The retrieval stream with gRPC's reference client:
 * Python grpcio — the C-core, strict about HTTP/2, content types and
 * trailers — reads a job through the endpoint of its `grpc` block over TLS
 * verified against the gateway's CA. Same rows and chunking as SSE, the
 * terminal marker, resume from a sequence, the token as request field or
 * metadata, gate_audit in the metadata, and denials as gRPC statuses.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { startGrpcioClient } from '../../../helpers/grpcio.ts';
import { createDataset, createJob, grantViewer, readSse, sseRows, V1 } from '../../../helpers/retrieval.ts';
import { CLEARANCE_ROWS, sampleRows, writeAllFormats } from '../../../helpers/retrieval-fixtures.ts';

async function world(t: { after(fn: () => unknown): void }) {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-grpcio-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const rows = sampleRows();
  const sample = writeAllFormats(root, 'sample', rows);
  const clearance = writeAllFormats(root, 'clearance', CLEARANCE_ROWS);
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, { name: 'sample', platform: 'file', properties: { path: sample.csv } });
  const gated = await createDataset(gw, admin, {
    name: 'clearance',
    platform: 'file',
    properties: { path: clearance.csv },
  });
  const gate = { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } };
  assert.equal(
    (await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(gated)}/gate`, { token: admin, json: gate }))
      .status,
    200,
  );
  const client = await startGrpcioClient(t, gw.gateway.caPem);
  return { gw, admin, urn, gated, rows, client };
}

test('grpcio streams a job: the rows and chunks SSE gives, then the terminal marker with the footer', async (t) => {
  const { gw, admin, urn, rows, client } = await world(t);
  // An explicit batch_size sets the rows per message (without one, gRPC jobs send 10 000).
  const job = await createJob(gw, admin, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1, batch_size: 1000 });
  assert.match(job.grpc.endpoint, /^grpcs:\/\//);
  const got = await client.stream({
    endpoint: job.grpc.endpoint,
    job_id: job.job_id,
    token: job.grpc.token,
    detail: true,
  });
  assert.equal(got.error, undefined, JSON.stringify(got.error));
  assert.deepEqual(got.data, rows);
  const sse = await readSse(gw, (await createJob(gw, admin, { dataset_urn: urn, transport: 'sse' })).job_id, admin);
  assert.deepEqual(got.data, sseRows(sse));
  const chunks = got.chunks ?? [];
  assert.deepEqual(
    chunks.map((c) => [c.sequence, c.row_count, c.final]),
    [
      [1, 1000, false],
      [2, 1000, false],
      [3, 500, false],
      [4, 0, true],
    ],
  );
  assert.equal(chunks.at(-1)?.metadata.rows, String(rows.length));
  assert.equal(chunks.at(-1)?.metadata.chunks, '3');
});

test('grpcio: resume from a sequence with the same token; the token as authorization metadata', async (t) => {
  const { gw, admin, urn, rows, client } = await world(t);
  const job = await createJob(gw, admin, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1, batch_size: 1000 });
  const base = { endpoint: job.grpc.endpoint, job_id: job.job_id, token: job.grpc.token, detail: true };
  const first = await client.stream(base);
  const resumed = await client.stream({ ...base, from_sequence: 3 });
  assert.deepEqual(
    resumed.chunks?.map((c) => c.sequence),
    [3, 4],
  );
  assert.deepEqual(resumed.data, rows.slice(2000));
  assert.deepEqual(first.data, rows);
  const byMetadata = await client.stream({ ...base, token_in: 'metadata' });
  assert.deepEqual(byMetadata.data, rows);
});

test('grpcio: a gated dataset carries gate_audit in each chunk metadata and filters rows by clearance', async (t) => {
  const { gw, gated, client } = await world(t);
  for (const [clearance, count, filtered] of [
    ['U', 3, true],
    ['TS', 5, false],
  ] as const) {
    const user = await gw.userToken(`reader-${clearance}`, { attributes: { clearance } });
    grantViewer(gw, gated, user.id);
    const job = await createJob(gw, user.token, { dataset_urn: gated, transport: 'grpc', grpc_protocol: V1 });
    const got = await client.stream({
      endpoint: job.grpc.endpoint,
      job_id: job.job_id,
      token: job.grpc.token,
      detail: true,
    });
    assert.equal(got.data?.length, count, clearance);
    for (const chunk of got.chunks ?? [])
      assert.equal(JSON.parse(chunk.metadata.gate_audit ?? 'null').filtered, filtered, clearance);
  }
});

test(
  'grpcio: a wrong token, or a token for another job, is UNAUTHENTICATED ' + 'grpc_token_invalid, never rows',
  async (t) => {
    const { gw, admin, urn, client } = await world(t);
    const job = await createJob(gw, admin, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1 });
    const wrong = await client.stream({ endpoint: job.grpc.endpoint, job_id: job.job_id, token: `${job.grpc.token}x` });
    assert.equal(wrong.error?.code, 'UNAUTHENTICATED', JSON.stringify(wrong));
    assert.match(wrong.error.details, /^grpc_token_invalid/);
    const other = await client.stream({
      endpoint: job.grpc.endpoint,
      job_id: '00000000-0000-4000-8000-000000000000',
      token: job.grpc.token,
    });
    assert.equal(other.error?.code, 'UNAUTHENTICATED', JSON.stringify(other));
    assert.match(other.error.details, /^grpc_token_invalid/);
    assert.doesNotMatch(JSON.stringify([wrong, other]), new RegExp(job.grpc.token));
  },
);
