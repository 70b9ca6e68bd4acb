/**
 * Retrieval over filesystem datasets: CSV, JSON lines and Parquet
 * read through inline, SSE and gRPC give identical rows; filters, columns,
 * limit and offset; the inline threshold; path escapes refused; ReBAC.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway, type TestGateway } from '../../../../../helpers/gateway.ts';
import {
  createDataset,
  createJob,
  grantViewer,
  grpcRows,
  readGrpc,
  readSse,
  sseRows,
  V1,
} from '../../../../../helpers/retrieval.ts';
import {
  FORMATS,
  type Format,
  sampleRows,
  type TextRow,
  writeAllFormats,
} from '../../../../../helpers/retrieval-fixtures.ts';

interface World {
  gw: TestGateway;
  admin: string;
  alice: string;
  urns: Record<Format, string>;
  rows: TextRow[];
  root: string;
}

async function world(t: { after(fn: () => unknown): void }, overrides: Record<string, unknown> = {}): Promise<World> {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-fs-root-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const rows = sampleRows();
  const paths = writeAllFormats(root, 'sample', rows);
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root], ...overrides } });
  const admin = await gw.adminToken();
  const alice = await gw.userToken('alice');
  const urns = {} as Record<Format, string>;
  for (const format of FORMATS) {
    urns[format] = await createDataset(gw, admin, {
      name: `sample-${format}`,
      platform: 'file',
      properties: { path: paths[format] },
    });
    grantViewer(gw, urns[format], alice.id);
  }
  return { gw, admin, alice: alice.token, urns, rows, root };
}

test('every format through inline, SSE and gRPC yields the same rows', async (t) => {
  const { gw, alice, urns, rows } = await world(t);
  for (const format of FORMATS) {
    const inline = await createJob(gw, alice, { dataset_urn: urns[format], transport: 'auto' });
    assert.equal(inline.transport, 'inline', format);
    assert.equal(inline.status, 'COMPLETED');
    assert.equal(inline.job_id, inline.id);
    assert.deepEqual(inline.inline.data, rows, `${format} inline`);
    assert.equal(inline.inline.row_count, rows.length);
    assert.deepEqual(inline.inline.metadata, {}, 'no gate: no gate_audit');

    const sseJob = await createJob(gw, alice, {
      dataset_urn: urns[format],
      transport: 'sse',
      sdk_session: 'ignored-unknown-key',
    });
    assert.equal(sseJob.transport, 'sse');
    assert.equal(sseJob.status, 'PENDING');
    const sse = await readSse(gw, sseJob.job_id, alice);
    assert.equal(sse.status, 200);
    assert.deepEqual(sseRows(sse), rows, `${format} sse`);
    const chunkEvents = sse.events.filter((e) => e.event === 'chunk');
    assert.deepEqual(
      chunkEvents.map((e) => e.data.sequence),
      [1, 2, 3],
    );
    assert.ok(sse.comments.length >= 1, 'a `:` comment opens the stream');
    assert.deepEqual(sse.events.at(-1), {
      event: 'complete',
      data: { event: 'complete', rows: rows.length, chunks: 3, metadata: { filtered: false } },
    });

    const grpcJob = await createJob(gw, alice, { dataset_urn: urns[format], transport: 'grpc', grpc_protocol: V1 });
    assert.equal(grpcJob.transport, 'grpc');
    assert.match(grpcJob.grpc.endpoint, /^grpcs:\/\/localhost:\d+$/);
    const grpc = await readGrpc(gw, grpcJob);
    assert.deepEqual(grpcRows(grpc), rows, `${format} grpc`);
    const last = grpc.chunks.at(-1);
    assert.equal(last?.final, true);
    assert.equal(last?.metadata.rows, String(rows.length));

    // The inline job replays as chunks on the stream.
    assert.deepEqual(sseRows(await readSse(gw, inline.job_id, alice)), rows);
    const status = await gw.request('GET', `/api/retrieval/jobs/${sseJob.job_id}`, { token: alice });
    assert.equal(status.json.status, 'COMPLETED');
    assert.deepEqual(status.json.progress, {
      rows_processed: rows.length,
      chunks_emitted: 3,
      bytes_processed: status.json.progress.bytes_processed,
    });
    assert.ok(status.json.progress.bytes_processed > 0);
    assert.equal(status.json.dataset.urn, urns[format]);
    assert.equal(status.json.dataset.format, format);
  }
});

test('filters (equality, list = IN), columns, offset and limit mean the same in every format', async (t) => {
  const { gw, alice, urns, rows } = await world(t);
  const cases = [
    {
      body: { filters: { region: 'north' }, columns: ['id', 'amount'], offset: 5, limit_rows: 10 },
      where: (r: TextRow) => r.region === 'north',
      skip: 5,
      take: 10,
    },
    {
      body: { filters: { region: ['south', 'east'], amount: 74 }, columns: ['note', 'id'] },
      where: (r: TextRow) => r.region !== 'north' && r.amount === '74',
      skip: 0,
      take: 1e9,
    },
    { body: { offset: 2490, batch_size: 3 }, where: () => true, skip: 2490, take: 1e9 },
    { body: { filters: { region: 'nowhere' } }, where: () => false, skip: 0, take: 1e9 },
  ];
  for (const c of cases) {
    const columns = (c.body as { columns?: string[] }).columns;
    const expected = rows
      .filter(c.where)
      .slice(c.skip, c.skip + c.take)
      .map((r) => (columns ? Object.fromEntries(columns.map((k) => [k, r[k]])) : r));
    for (const format of FORMATS) {
      const inline = await createJob(gw, alice, { dataset_urn: urns[format], ...c.body, transport: 'inline' });
      assert.deepEqual(inline.inline.data, expected, `${format} ${JSON.stringify(c.body)}`);
      if (columns) assert.deepEqual(Object.keys(inline.inline.data[0]), columns, 'column order follows the request');
      const job = await createJob(gw, alice, {
        dataset_urn: urns[format],
        ...c.body,
        transport: 'grpc',
        grpc_protocol: V1,
      });
      assert.deepEqual(grpcRows(await readGrpc(gw, job)), expected);
    }
  }
  // A column or filter key a CSV or Parquet file does not have is a 422 naming it, as with every source
  // with a schema; JSON lines are schemaless: a key absent from a row reads as null.
  for (const format of ['csv', 'parquet'] as const) {
    for (const body of [{ columns: ['id', 'nope'] }, { filters: { nope: 'x' } }]) {
      const res = await gw.request('POST', '/api/retrieval/jobs', {
        token: alice,
        json: { dataset_urn: urns[format], ...body },
      });
      assert.equal(res.status, 422, `${format} ${res.text}`);
      assert.deepEqual([res.json.detail.reason, res.json.detail.column], ['unknown_column', 'nope']);
    }
  }
  const sparse = await createJob(gw, alice, { dataset_urn: urns.jsonl, columns: ['id', 'nope'], limit_rows: 2 });
  assert.deepEqual(sparse.inline.data, [
    { id: rows[0]?.id, nope: null },
    { id: rows[1]?.id, nope: null },
  ]);
  assert.deepEqual((await createJob(gw, alice, { dataset_urn: urns.jsonl, filters: { nope: 'x' } })).inline.data, []);
});

test('files without rows, and JSON lines whose keys vary, read without a schema error', async (t) => {
  const { gw, admin, root } = await world(t);
  const files = { 'header-only.csv': 'id,name\n', 'empty.csv': '', 'sparse.jsonl': '{"id":1}\n{"id":2,"note":"x"}\n' };
  const urns: Record<string, string> = {};
  for (const [name, text] of Object.entries(files)) {
    writeFileSync(join(root, name), text);
    urns[name] = await createDataset(gw, admin, { name, platform: 'file', properties: { path: join(root, name) } });
  }
  assert.deepEqual(
    (await createJob(gw, admin, { dataset_urn: urns['header-only.csv'], columns: ['id'] })).inline.data,
    [],
  );
  assert.deepEqual((await createJob(gw, admin, { dataset_urn: urns['empty.csv'], columns: ['id'] })).inline.data, []);
  const sparse = urns['sparse.jsonl'] as string;
  assert.deepEqual((await createJob(gw, admin, { dataset_urn: sparse, columns: ['id', 'note'] })).inline.data, [
    { id: 1, note: null },
    { id: 2, note: 'x' },
  ]);
  assert.deepEqual((await createJob(gw, admin, { dataset_urn: sparse, filters: { note: 'x' } })).inline.data, [
    { id: 2, note: 'x' },
  ]);
});

test('auto streams beyond the inline threshold; inline is refused with 422 naming it', async (t) => {
  const { gw, alice, urns } = await world(t, { inlineThresholdBytes: 64 * 1024 });
  const auto = await createJob(gw, alice, { dataset_urn: urns.csv });
  assert.equal(auto.transport, 'sse');
  assert.equal(auto.inline, null);
  const refused = await gw.request('POST', '/api/retrieval/jobs', {
    token: alice,
    json: { dataset_urn: urns.csv, transport: 'inline' },
  });
  assert.equal(refused.status, 422);
  assert.equal(refused.json.detail.reason, 'inline_threshold_exceeded');
  assert.match(refused.text, /inline threshold/);
  const small = await createJob(gw, alice, { dataset_urn: urns.parquet, transport: 'inline', limit_rows: 10 });
  assert.equal(small.inline.row_count, 10);
});

test('paths outside the roots, with .., or through a symlink are refused', async (t) => {
  const { gw, admin, root } = await world(t);
  const outside = mkdtempSync(join(tmpdir(), 'meshgate-outside-'));
  t.after(() => rmSync(outside, { recursive: true, force: true }));
  writeFileSync(join(outside, 'secret.csv'), 'a\n1\n');
  mkdirSync(join(root, 'sub'));
  symlinkSync(join(outside, 'secret.csv'), join(root, 'link.csv'));
  symlinkSync(outside, join(root, 'sub', 'dirlink'));
  const attempts = {
    outside: join(outside, 'secret.csv'),
    dotdot: `${root}/../${outside.split('/').pop()}/secret.csv`,
    encodedish: `${root}/sub/../../etc/passwd.csv`,
    fileLink: join(root, 'link.csv'),
    dirLink: join(root, 'sub', 'dirlink', 'secret.csv'),
    relative: 'sample.csv',
  };
  for (const [name, path] of Object.entries(attempts)) {
    const urn = await createDataset(gw, admin, { name: `escape-${name}`, platform: 'file', properties: { path } });
    const res = await gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: urn } });
    assert.equal(res.status, 403, `${name}: ${res.text}`);
    assert.equal(res.json.detail.reason, 'path_not_allowed');
    assert.doesNotMatch(res.text, /"a"|secret\.csv"\s*:/);
  }
  const missing = await createDataset(gw, admin, { name: 'missing', platform: 'file', properties: {} });
  const res = await gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: missing } });
  assert.equal(res.status, 400);
  assert.deepEqual(res.json, { detail: 'Dataset is missing a location property' });
});

test('a caller without viewer gets 404 on create, status and stream; jobs are listed per owner', async (t) => {
  const { gw, admin, alice, urns } = await world(t);
  const bob = await gw.userToken('bob');
  const denied = await gw.request('POST', '/api/retrieval/jobs', { token: bob.token, json: { dataset_urn: urns.csv } });
  assert.equal(denied.status, 404);
  const aliceJob = await createJob(gw, alice, { dataset_urn: urns.csv, transport: 'sse' });
  for (const path of [`/api/retrieval/jobs/${aliceJob.job_id}`, `/api/retrieval/jobs/${aliceJob.job_id}/stream`]) {
    const res = await gw.request('GET', path, { token: bob.token });
    assert.equal(res.status, 404);
    assert.equal(res.json.detail.reason, 'retrieval_job_not_found');
    assert.ok(res.text.length < 300, 'denials are small JSON bodies');
  }
  const cancel = await gw.request('POST', `/api/retrieval/jobs/${aliceJob.job_id}/cancel`, { token: bob.token });
  assert.equal(cancel.status, 404);
  // The job id is a UUID path parameter; anything else is a 422, an unknown UUID a 404.
  for (const [method, path] of [
    ['GET', '/api/retrieval/jobs/not-a-uuid'],
    ['GET', '/api/retrieval/jobs/not-a-uuid/stream'],
    ['POST', '/api/retrieval/jobs/not-a-uuid/cancel'],
  ] as const) {
    const res = await gw.request(method, path, { token: alice });
    assert.equal(res.status, 422, path);
    assert.deepEqual(res.json.detail[0].loc, ['path', 'id'], 'a FastAPI-style problem list naming the parameter');
  }
  const unknown = await gw.request('GET', '/api/retrieval/jobs/00000000-0000-4000-8000-000000000000', { token: alice });
  assert.deepEqual([unknown.status, unknown.json.detail.reason], [404, 'retrieval_job_not_found']);
  const mine = await gw.request('GET', '/api/retrieval/jobs?limit=10', { token: alice });
  assert.deepEqual(
    mine.json.map((j: { job_id: string }) => j.job_id),
    [aliceJob.job_id],
  );
  assert.deepEqual((await gw.request('GET', '/api/retrieval/jobs', { token: bob.token })).json, []);
  const all = await gw.request('GET', '/api/retrieval/jobs', { token: admin });
  assert.ok(
    all.json.some((j: { job_id: string }) => j.job_id === aliceJob.job_id),
    'a native admin lists every job',
  );
  const canceled = await gw.request('POST', `/api/retrieval/jobs/${aliceJob.job_id}/cancel`, { token: alice });
  assert.equal(canceled.json.status, 'CANCELED');
  const stream = await readSse(gw, aliceJob.job_id, alice);
  assert.equal(stream.status, 409);
  assert.equal(stream.json.detail.reason, 'retrieval_job_canceled');
  const bad = await gw.request('POST', '/api/retrieval/jobs', {
    token: alice,
    json: { dataset_urn: urns.csv, limit_rows: 0, transport: 'ftp' },
  });
  assert.equal(bad.status, 422);
});
