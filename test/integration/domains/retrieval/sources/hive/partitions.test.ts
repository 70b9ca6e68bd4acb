/**
 * Hive-partitioned directory layouts (`key=value/` folders) on the local
 * file system and on a real S3-compatible server (moto): the source
 * contract over a folder of part files, partition columns in the schema
 * and the rows, %-escaped values, and pruning — a corrupt file in a pruned
 * partition is never opened, so a filtered read succeeds where a full read
 * fails.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { hiveSources } from '../../../../../../domains/retrieval/sources/hive/source.ts';
import type { ReadRequest, Row, Source, SourceInput } from '../../../../../../domains/retrieval/sources/types.ts';
import { runSourceContract } from '../../../../../contract/source.contract.ts';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { s3ClientFor, startS3 } from '../../../../../helpers/peers/s3.ts';
import { createDataset, createJob } from '../../../../../helpers/retrieval.ts';
import { type TextRow, writeAllFormats } from '../../../../../helpers/retrieval-fixtures.ts';

function tempRoot(t: { after(fn: () => unknown): void }): string {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-hive-layout-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

const input = (
  location: string,
  properties: Record<string, unknown> = {},
  credentialOverride: string | null = null,
): SourceInput => ({
  urn: 'urn:li:dataset:(urn:li:dataPlatform:hive,layout,PROD)',
  platform: 'hive',
  name: 'layout',
  properties: { location, ...properties },
  options: {},
  credentialOverride,
  formatHint: null,
  tag: 'meshgate-retrieval:hive-layout-test',
});

async function readAll(source: Source, request: Partial<ReadRequest> = {}): Promise<Row[]> {
  const rows: Row[] = [];
  const full: ReadRequest = {
    columns: null,
    filters: {},
    offset: 0,
    limit: null,
    batchSize: 100,
    signal: new AbortController().signal,
    ...request,
  };
  for await (const batch of source.read(full)) rows.push(...batch);
  return rows;
}

/** Writes the rows of each partition as `<folders>/part-0.<format>`. */
function writeLayout(root: string, partitions: Record<string, TextRow[]>, format: 'csv' | 'parquet'): void {
  for (const [folders, rows] of Object.entries(partitions)) {
    const dir = join(root, folders);
    mkdirSync(dir, { recursive: true });
    const paths = writeAllFormats(dir, 'part-0', rows);
    for (const other of ['csv', 'jsonl', 'parquet'] as const) if (other !== format) rmSync(paths[other]);
  }
}

for (const format of ['csv', 'parquet'] as const) {
  runSourceContract(`hive layout of ${format} part files`, async (t, rows) => {
    const root = tempRoot(t);
    writeLayout(root, { '.': rows.slice(0, 30) }, format);
    const second = writeAllFormats(mkdtempSync(join(root, '.tmp-')), 'part-1', rows.slice(30));
    writeFileSync(join(root, `part-1.${format}`), readFileSync(second[format]));
    writeFileSync(join(root, '_SUCCESS'), '');
    return hiveSources([root], () => undefined).create(input(root));
  });
}

const SALES = (year: string, region: string, n: number): TextRow[] =>
  Array.from({ length: n }, (_, i) => ({ id: `${year}-${region}-${i}`, amount: String(i * 10) }));

test(
  'hive layout: partition columns, pruning (a corrupt file in a pruned ' +
    'partition is never opened), %-escaped values',
  async (t) => {
    const root = tempRoot(t);
    writeLayout(
      root,
      {
        'year=2023/region=north': SALES('2023', 'north', 3),
        'year=2023/region=south': SALES('2023', 'south', 2),
        'year=2024/region=north': SALES('2024', 'north', 4),
        'year=2024/region=s%2Fw': SALES('2024', 's/w', 1),
      },
      'parquet',
    );
    mkdirSync(join(root, 'year=2025', 'region=east'), { recursive: true });
    writeFileSync(join(root, 'year=2025', 'region=east', 'part-0.parquet'), 'not a parquet file');
    const source = await hiveSources([root], () => undefined).create(input(root));
    assert.deepEqual(
      (await source.schema(new AbortController().signal)).map((f) => f.name),
      ['id', 'amount', 'year', 'region'],
    );
    assert.deepEqual(await readAll(source, { filters: { year: '2024' }, columns: ['id', 'region'] }), [
      ...SALES('2024', 'north', 4).map((r) => ({ id: r.id, region: 'north' })),
      { id: '2024-s/w-0', region: 's/w' },
    ]);
    assert.deepEqual(await readAll(source, { filters: { year: ['2023', '2024'], region: 'north', amount: '20' } }), [
      { id: '2023-north-2', amount: '20', year: '2023', region: 'north' },
      { id: '2024-north-2', amount: '20', year: '2024', region: 'north' },
    ]);
    assert.deepEqual(await readAll(source, { filters: { region: 's/w' }, columns: ['year'] }), [{ year: '2024' }]);
    await assert.rejects(readAll(source), 'an unpruned read does open the corrupt file');
  },
);

test(
  'hive layout on object storage (moto), through the gateway; locations ' + 'outside the roots are refused',
  async (t) => {
    const peer = await startS3(t);
    const client = s3ClientFor(peer, t);
    await client.send(new CreateBucketCommand({ Bucket: 'lake' }));
    const staging = tempRoot(t);
    const files: Record<string, string> = {};
    for (const [folder, rows] of [
      ['dt=2024-01-01', SALES('d1', 'x', 3)],
      ['dt=2024-01-02', SALES('d2', 'x', 2)],
    ] as const) {
      const dir = join(staging, folder);
      mkdirSync(dir);
      files[`sales/${folder}/part-0.csv`] = writeAllFormats(dir, 'part-0', rows).csv;
    }
    for (const [Key, path] of Object.entries(files))
      await client.send(new PutObjectCommand({ Bucket: 'lake', Key, Body: readFileSync(path) }));
    await client.send(
      new PutObjectCommand({ Bucket: 'lake', Key: 'sales/dt=2024-01-03/part-0.csv', Body: 'id,amount\n"unterminated' }),
    );

    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    const credentials = JSON.stringify({
      aws_access_key_id: peer.accessKeyId,
      aws_secret_access_key: peer.secretAccessKey,
    });
    const urn = await createDataset(gw, admin, {
      name: 'lake.sales',
      platform: 'hive',
      properties: { location: 's3://lake/sales', endpoint: peer.endpoint },
    });
    const job = await createJob(gw, admin, {
      dataset_urn: urn,
      credential_override: credentials,
      filters: { dt: ['2024-01-02', '2024-01-01'] },
    });
    assert.deepEqual(job.dataset.path, 's3://lake/sales');
    assert.deepEqual(job.inline.data, [
      ...SALES('d1', 'x', 3).map((r) => ({ ...r, dt: '2024-01-01' })),
      ...SALES('d2', 'x', 2).map((r) => ({ ...r, dt: '2024-01-02' })),
    ]);
    const outside = await createDataset(gw, admin, { name: 'etc', platform: 'hive', properties: { location: '/etc' } });
    const refused = await gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: outside } });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.detail.reason, 'path_not_allowed');
  },
);
