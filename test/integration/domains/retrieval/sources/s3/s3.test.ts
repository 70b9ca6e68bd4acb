/**
 * The object-storage source against a real S3-compatible server (moto,
 * startS3): the source contract for CSV, JSON lines and Parquet objects,
 * prefixes read as one table, credentials from a catalog secret or
 * credential_override through the gateway, Parquet read by range requests
 * (bytes counted on a loopback proxy in front of moto), and moto stopped
 * mid-stream.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { s3Sources } from '../../../../../../domains/retrieval/sources/s3/source.ts';
import type { SourceInput } from '../../../../../../domains/retrieval/sources/types.ts';
import { runSourceContract } from '../../../../../contract/source.contract.ts';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { type S3Peer, startS3 } from '../../../../../helpers/peers/s3.ts';
import { createDataset, createJob, grantViewer, readSse, sseRows } from '../../../../../helpers/retrieval.ts';
import { FORMATS, sampleRows, type TextRow, writeAllFormats } from '../../../../../helpers/retrieval-fixtures.ts';
import { countingProxy, sharedPeer, streamThroughOutage } from '../../../../../helpers/retrieval-sources.ts';

const s3 = sharedPeer(startS3);

function clientFor(peer: S3Peer): S3Client {
  return new S3Client({
    endpoint: peer.endpoint,
    region: peer.region,
    forcePathStyle: true,
    credentials: { accessKeyId: peer.accessKeyId, secretAccessKey: peer.secretAccessKey },
  });
}

let buckets = 0;
/** A fresh bucket holding `<base>.csv|.jsonl|.parquet` of the rows (and any extra objects). */
async function bucketWith(
  peer: S3Peer,
  base: string,
  rows: readonly TextRow[],
  extra: Record<string, string | Uint8Array> = {},
): Promise<string> {
  const bucket = `b${process.pid}-${++buckets}`;
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-s3-'));
  const client = clientFor(peer);
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    const paths = writeAllFormats(dir, base, rows);
    const objects: Record<string, string | Uint8Array> = { ...extra };
    for (const format of FORMATS) objects[`${base}.${format}`] = readFileSync(paths[format]);
    // The CSV again under an extension that names no format (format_hint cases).
    objects[`${base}.data`] = readFileSync(paths.csv);
    for (const [Key, Body] of Object.entries(objects))
      await client.send(new PutObjectCommand({ Bucket: bucket, Key, Body }));
  } finally {
    client.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  return bucket;
}

const credentials = (peer: S3Peer) =>
  JSON.stringify({ aws_access_key_id: peer.accessKeyId, aws_secret_access_key: peer.secretAccessKey });

function input(
  name: string,
  properties: Record<string, unknown>,
  credentialOverride: string | null = null,
): SourceInput {
  return {
    urn: `urn:li:dataset:(urn:li:dataPlatform:s3,${name},PROD)`,
    platform: 's3',
    name,
    properties,
    options: {},
    credentialOverride,
    formatHint: null,
    tag: 'meshgate-retrieval:s3-test',
  };
}

for (const format of FORMATS) {
  runSourceContract(`s3 ${format}`, async (_t, rows) => {
    const peer = await s3();
    const bucket = await bucketWith(peer, 'contract', rows);
    return s3Sources(() => undefined).create(
      input(`${bucket}/contract.${format}`, { endpoint: peer.endpoint }, credentials(peer)),
    );
  });
}

runSourceContract('s3 prefix of Parquet parts', async (_t, rows) => {
  const peer = await s3();
  const part = (from: number, to: number) => {
    const slice = rows.slice(from, to);
    const columnData = ['id', 'grp', 'val'].map((name) => ({
      name,
      data: slice.map((r) => r[name] as string),
      type: 'STRING' as const,
    }));
    return new Uint8Array(parquetWriteBuffer({ columnData, rowGroupSize: 9 }));
  };
  const bucket = await bucketWith(peer, 'unused', rows.slice(0, 1), {
    'parts/part-0.parquet': part(0, 20),
    'parts/part-1.parquet': part(20, 41),
    'parts/part-2.parquet': part(41, rows.length),
    'parts/_SUCCESS': 'done',
  });
  return s3Sources(() => undefined).create(input(`${bucket}/parts/`, { endpoint: peer.endpoint }, credentials(peer)));
});

test(
  's3 through the gateway: a catalog secret signs; credential_override ' + 'and format_hint win; bad inputs are 4xx',
  async (t) => {
    const peer = await s3();
    const rows = sampleRows(1200);
    const bucket = await bucketWith(peer, 'sales', rows);
    // The dataset without an endpoint of its own is read where an override points: the operator allows moto.
    const gw = await startTestGateway(t, { retrieval: { endpointHosts: { s3: [new URL(peer.endpoint).host] } } });
    const admin = await gw.adminToken();
    const secret = (
      await gw.request('POST', '/api/catalog/secrets/', {
        token: admin,
        json: { name: 's3-keys', value: credentials(peer) },
      })
    ).json;
    const urn = await createDataset(gw, admin, {
      name: `${bucket}/sales.parquet`,
      platform: 's3',
      properties: { endpoint: peer.endpoint, secret_urn: secret },
    });
    const alice = await gw.userToken('alice');
    grantViewer(gw, urn, alice.id);
    const job = await createJob(gw, alice.token, { dataset_urn: urn, transport: 'sse', batch_size: 250 });
    assert.deepEqual(job.dataset.path, `s3://${bucket}/sales.parquet`);
    assert.equal(job.dataset.format, 'parquet');
    assert.deepEqual(sseRows(await readSse(gw, job.job_id, alice.token)), rows);
    const filtered = await createJob(gw, alice.token, {
      dataset_urn: urn,
      filters: { region: 'east' },
      columns: ['id'],
      limit_rows: 3,
    });
    assert.deepEqual(
      filtered.inline.data,
      rows
        .filter((r) => r.region === 'east')
        .slice(0, 3)
        .map((r) => ({ id: r.id })),
    );

    const bare = await createDataset(gw, admin, { name: `${bucket}/sales.data`, platform: 's3', properties: {} });
    grantViewer(gw, bare, alice.id);
    const override = JSON.stringify({
      ...JSON.parse(credentials(peer)),
      endpoint_url: peer.endpoint,
      region: 'eu-west-1',
    });
    const viaOverride = await createJob(gw, alice.token, {
      dataset_urn: bare,
      credential_override: override,
      format_hint: 'csv',
      limit_rows: 5,
    });
    assert.deepEqual(viaOverride.inline.data, rows.slice(0, 5));

    const refusals: [Record<string, unknown>, number, string][] = [
      [{ dataset_urn: bare, format_hint: 'csv' }, 400, 'source_credentials_missing'],
      [{ dataset_urn: bare, credential_override: override }, 422, 'source_unsupported'],
      [{ dataset_urn: urn, columns: ['nope'] }, 422, 'unknown_column'],
      [{ dataset_urn: bare, credential_override: 'not json', format_hint: 'csv' }, 400, 'source_credentials_missing'],
    ];
    for (const [body, status, reason] of refusals) {
      const res = await gw.request('POST', '/api/retrieval/jobs', { token: alice.token, json: body });
      assert.equal(res.status, status, res.text);
      assert.equal(res.json.detail.reason, reason);
    }
    const missing = await createDataset(gw, admin, {
      name: `${bucket}/nothing-here.csv`,
      platform: 's3',
      properties: { endpoint: peer.endpoint, secret_urn: secret },
    });
    const notFound = await gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: missing } });
    assert.equal(notFound.status, 404);
    assert.equal(notFound.json.detail.reason, 'source_not_found');
    assert.ok(!gw.logs.join('').includes(peer.secretAccessKey), 'keys never reach a log line');
  },
);

test('s3 Parquet is read by range requests: one column of a wide file moves a fraction of its bytes', async (t) => {
  const peer = await s3();
  const count = 20_000;
  const wide = Array.from({ length: 8 }, (_, c) => ({
    name: `c${c}`,
    data: Array.from({ length: count }, (_, i) => `${c}-${i}-${'x'.repeat(30)}`),
    type: 'STRING' as const,
  }));
  const id = { name: 'id', data: Array.from({ length: count }, (_, i) => i), type: 'INT32' as const };
  const body = new Uint8Array(parquetWriteBuffer({ columnData: [id, ...wide], rowGroupSize: 5000 }));
  const bucket = await bucketWith(peer, 'unused', [{ a: '1' }], { 'wide.parquet': body });
  const proxy = await countingProxy(t, peer.endpoint);
  const source = s3Sources(() => undefined).create(
    input(`${bucket}/wide.parquet`, { endpoint: proxy.endpoint }, credentials(peer)),
  );
  const ids: unknown[] = [];
  const request = {
    columns: ['id'],
    filters: {},
    offset: 12_000,
    limit: null,
    batchSize: 1000,
    signal: new AbortController().signal,
  };
  for await (const batch of (await source).read(request)) ids.push(...batch.map((r) => r.id));
  assert.deepEqual(
    ids,
    Array.from({ length: count - 12_000 }, (_, i) => 12_000 + i),
  );
  assert.ok(proxy.received() < body.length / 5, `moved ${proxy.received()} bytes of a ${body.length}-byte object`);
});

test('s3 stopped mid-stream: an error event, the job FAILED with source_unavailable, no hang', async (t) => {
  const peer = await startS3(t);
  const rows = Array.from({ length: 200_000 }, (_, i) => ({
    id: `r${i}`,
    region: 'north',
    amount: String(i),
    note: 'y'.repeat(40),
  }));
  const csv = `id,region,amount,note\n${rows.map((r) => `${r.id},${r.region},${r.amount},${r.note}`).join('\n')}\n`;
  const bucket = await bucketWith(peer, 'unused', [{ a: '1' }], { 'big.csv': csv });
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, {
    name: `${bucket}/big.csv`,
    platform: 's3',
    properties: { endpoint: peer.endpoint },
  });
  const job = await createJob(gw, admin, {
    dataset_urn: urn,
    transport: 'sse',
    batch_size: 500,
    credential_override: credentials(peer),
  });
  const outcome = await streamThroughOutage(gw, admin, job.job_id, () => peer.stop());
  assert.ok(outcome.rows < rows.length, `stopped after ${outcome.rows} rows`);
  assert.equal(outcome.last.event, 'error');
  assert.equal(outcome.last.data.reason, 'source_unavailable');
  assert.match(String(outcome.last.data.message), /object storage/);
  assert.deepEqual(
    { status: outcome.job.status, error: outcome.job.error },
    { status: 'FAILED', error: 'source_unavailable' },
  );
});
