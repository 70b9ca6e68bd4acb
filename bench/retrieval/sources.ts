/**
 * SSE throughput of every retrieval source beside Postgres, in one run:
 * the same rows `(id, region, amount,
 * note)` served by a real PostgreSQL, moto (CSV and Parquet objects, and a
 * Hive-partitioned Parquet layout), a KRaft Kafka broker (JSON messages), a
 * HiveServer2 (text table) and the local Slack Web API server; one
 * in-process gateway (the test harness, TLS verified) and one SSE client
 * (undici). Prints rows/s per source and the ratio to Postgres. Bounded:
 * each stream is read once. Never run by the test suite.
 *
 *   npx tsx bench/retrieval/sources.ts [rows=200000] [hiveRows=50000]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Admin, Producer, stringSerializers } from '@platformatic/kafka';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { request } from 'undici';
import { startTestGateway, type TestGateway } from '../../test/helpers/gateway.ts';
import { startHive } from '../../test/helpers/peers/hive.ts';
import { startKafka } from '../../test/helpers/peers/kafka.ts';
import { startPostgres } from '../../test/helpers/peers/postgres.ts';
import { startS3 } from '../../test/helpers/peers/s3.ts';
import { startSlackApi } from '../../test/helpers/slack-api.ts';

const [rows = 200_000, hiveRows = 50_000] = process.argv.slice(2).map(Number);
const cleanups: (() => unknown)[] = [];
const t = { after: (fn: () => unknown) => cleanups.push(fn) };
const REGIONS = ['north', 'south', 'east'];
const row = (i: number) => ({
  id: String(i),
  region: REGIONS[i % 3] as string,
  amount: String((i * 37) % 1000),
  note: `row-${i}`,
});
const csvOf = (n: number) =>
  `id,region,amount,note\n${Array.from({ length: n }, (_, i) => Object.values(row(i)).join(',')).join('\n')}\n`;
const parquetOf = (n: number) =>
  new Uint8Array(
    parquetWriteBuffer({
      columnData: Object.keys(row(0)).map((name) => ({
        name,
        data: Array.from({ length: n }, (_, i) => row(i)[name as 'id']),
        type: 'STRING' as const,
      })),
    }),
  );

async function sse(
  gw: TestGateway,
  token: string,
  urn: string,
  body: Record<string, unknown> = {},
): Promise<{ rows: number; seconds: number }> {
  const started = process.hrtime.bigint();
  const job = (
    await gw.request('POST', '/api/retrieval/jobs', { token, json: { dataset_urn: urn, transport: 'sse', ...body } })
  ).json;
  const res = await request(`${gw.url}/api/retrieval/jobs/${job.job_id}/stream`, {
    headers: { authorization: `Bearer ${token}` },
    dispatcher: gw.agent,
  });
  let tail = '';
  for await (const piece of res.body) tail = (tail + Buffer.from(piece).toString('latin1')).slice(-4096);
  const complete = /"rows":(\d+)/.exec(tail.slice(tail.lastIndexOf('event: complete')));
  if (!complete) throw new Error(`stream of ${urn} did not complete: ${tail.slice(-300)}`);
  return { rows: Number(complete[1]), seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

async function main(): Promise<void> {
  const [pg, s3, kafka, hive] = [await startPostgres(t), await startS3(t), await startKafka(t), await startHive(t)];
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  const dataset = async (name: string, platform: string, properties: Record<string, unknown>) =>
    (await gw.request('POST', '/api/catalog/datasets/', { token, json: { name, platform, properties } }))
      .json as string;
  const keys = { aws_access_key_id: s3.accessKeyId, aws_secret_access_key: s3.secretAccessKey };
  const secret = async (name: string, value: string) =>
    (await gw.request('POST', '/api/catalog/secrets/', { token, json: { name, value } })).json as string;

  await pg.psql(
    `CREATE TABLE bench (id text, region text, amount text, note text); ` +
      `INSERT INTO bench SELECT i::text, (ARRAY['north','south','east'])[i % ` +
      `3 + 1], ((i * 37) % 1000)::text, 'row-' || i FROM generate_series(0, ${rows - 1}) i;`,
  );
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  await client.send(new CreateBucketCommand({ Bucket: 'bench' }));
  const put = (Key: string, Body: string | Uint8Array) =>
    client.send(new PutObjectCommand({ Bucket: 'bench', Key, Body }));
  await put('rows.csv', csvOf(rows));
  await put('rows.parquet', parquetOf(rows));
  for (let p = 0; p < 4; p++) await put(`layout/part=${p}/rows.parquet`, parquetOf(rows / 4));
  client.destroy();
  const admin = new Admin({ clientId: 'bench', bootstrapBrokers: [kafka.bootstrapServers] });
  await admin.createTopics({ topics: ['bench'], partitions: 1, replicas: 1 });
  await admin.close();
  const producer = new Producer({
    clientId: 'bench',
    bootstrapBrokers: [kafka.bootstrapServers],
    serializers: stringSerializers,
    idempotent: true,
  });
  for (let i = 0; i < rows; i += 10_000) {
    await producer.send({
      messages: Array.from({ length: Math.min(10_000, rows - i) }, (_, j) => ({
        topic: 'bench',
        value: JSON.stringify(row(i + j)),
      })),
    });
  }
  await producer.close();
  const hiveDir = join(hive.dataDir, 'bench');
  mkdirSync(hiveDir);
  writeFileSync(join(hiveDir, 'rows.csv'), csvOf(hiveRows).split('\n').slice(1).join('\n'));
  await hive.query(
    `CREATE EXTERNAL TABLE bench (id STRING, region STRING, amount STRING, ` +
      `note STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' LOCATION ` +
      `'file://${hiveDir}'`,
  );
  const slack = await startSlackApi(t, 'xoxb-bench', [
    {
      id: 'C0BENCH',
      name: 'bench',
      messages: Array.from({ length: rows }, (_, i) => ({
        type: 'message',
        ts: `${1_700_000_000 + rows - i}.000100`,
        ...row(i),
      })),
    },
  ]);

  const s3Secret = await secret('bench-s3', JSON.stringify(keys));
  const cases: [string, string, Record<string, unknown>][] = [
    [
      'postgres',
      await dataset('bench', 'postgres', {
        host: pg.host,
        port: pg.port,
        database: pg.database,
        secret_urn: await secret('bench-pg', JSON.stringify({ user: pg.user, password: pg.password })),
      }),
      {},
    ],
    ['s3 csv', await dataset('bench/rows.csv', 's3', { endpoint: s3.endpoint, secret_urn: s3Secret }), {}],
    [
      's3 parquet (ranged)',
      await dataset('bench/rows.parquet', 's3', { endpoint: s3.endpoint, secret_urn: s3Secret }),
      {},
    ],
    [
      'hive layout on s3 (4 parquet partitions)',
      await dataset('layout', 'hive', { location: 's3://bench/layout', endpoint: s3.endpoint, secret_urn: s3Secret }),
      {},
    ],
    ['kafka json', await dataset('bench', 'kafka', { bootstrap_servers: kafka.bootstrapServers }), {}],
    ['hive (HiveServer2 Thrift)', await dataset('default.bench', 'hive', { host: hive.host, port: hive.port }), {}],
    [
      'slack (local Web API server)',
      await dataset('workspace', 'slack', { api_url: slack.url }),
      { options: { channels: ['C0BENCH'] }, credential_override: 'xoxb-bench' },
    ],
  ];
  const results = ['| source | rows | SSE rows/s | ×Postgres |', '|---|---|---|---|'];
  let reference = 0;
  for (const [name, urn, body] of cases) {
    const run = await sse(gw, token, urn, body);
    const rate = Math.round(run.rows / run.seconds);
    reference ||= rate;
    results.push(`| ${name} | ${run.rows} | ${rate} | ${(rate / reference).toFixed(2)} |`);
  }
  process.stdout.write(`${results.join('\n')}\n`);
}

try {
  await main();
} finally {
  for (const fn of cleanups.reverse()) await fn();
}
