/**
 * Arrow Flight from every source beside Postgres and files, read by
 * pyarrow.flight against real peers: S3 (moto: Parquet with typed columns,
 * JSON lines, CSV), HiveServer2 (a text table of every Hive type the
 * mapping names, nested ones included), Kafka (JSON messages and the
 * metadata columns) and the local Slack Web API server. Each checks the
 * Arrow type of every column and the values pyarrow decodes, NULLs
 * included, and that the job is COMPLETED after the last batch.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Admin, Producer, stringSerializers } from '@platformatic/kafka';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { type FlightResult, flightGet, startFlightClient } from '../../../../helpers/flight.ts';
import { startTestGateway, type TestGateway } from '../../../../helpers/gateway.ts';
import { startHive } from '../../../../helpers/peers/hive.ts';
import { startKafka } from '../../../../helpers/peers/kafka.ts';
import { s3ClientFor, startS3 } from '../../../../helpers/peers/s3.ts';
import { createDataset, createJob, type Row } from '../../../../helpers/retrieval.ts';
import { startSlackApi } from '../../../../helpers/slack-api.ts';

type After = { after(fn: () => unknown): void };

async function gatewayWithFlight(t: After) {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const flight = await startFlightClient(t, gw.gateway.caPem);
  return { gw, admin, flight };
}

/**
 * One Flight read of a fresh `grpc` job; asserts it succeeded and the job then reads COMPLETED with every row counted.
 */
async function readAll(
  gw: TestGateway,
  token: string,
  flight: Awaited<ReturnType<typeof startFlightClient>>,
  job: Record<string, unknown>,
): Promise<FlightResult & { data: Row[] }> {
  const created = await createJob(gw, token, { transport: 'grpc', ...job });
  const got = await flight.get(flightGet(created));
  assert.equal(got.error, undefined, JSON.stringify(got.error));
  const status = (await gw.request('GET', `/api/retrieval/jobs/${created.job_id}`, { token })).json;
  assert.equal(status.status, 'COMPLETED');
  assert.equal(status.progress.rows_processed, got.rows);
  assert.equal(got.metadata?.at(-1).rows, got.rows);
  return got as FlightResult & { data: Row[] };
}

test(
  'S3 over Flight: Parquet columns keep their types, JSON lines are ' + 'typed from their values, CSV cells are text',
  async (t) => {
    const s3 = await startS3(t);
    const { gw, admin, flight } = await gatewayWithFlight(t);
    const client = s3ClientFor(s3, t);
    await client.send(new CreateBucketCommand({ Bucket: 'typed' }));
    const at = [new Date('2024-01-02T03:04:05.123Z'), null, new Date('1969-12-31T23:59:59.999Z')];
    const parquet = parquetWriteBuffer({
      columnData: [
        { name: 'i32', data: [1, null, -2147483648], type: 'INT32' },
        { name: 'i64', data: [9007199254740993n, null, -5n], type: 'INT64' },
        { name: 'f64', data: [0.5, null, -1e300], type: 'DOUBLE' },
        { name: 'f32', data: [1.5, null, -0.25], type: 'FLOAT' },
        { name: 'ok', data: [true, null, false], type: 'BOOLEAN' },
        { name: 's', data: ['ü "q"', null, ''], type: 'STRING' },
        { name: 'at', data: at, type: 'TIMESTAMP' },
      ],
    });
    const jsonl = [
      { n: 1, s: 'a', b: true, o: { x: 1, y: 'p' }, l: [1, 2], mixed: 1 },
      { n: 2.5, s: null, b: false, o: null, l: [], mixed: 'two' },
      { n: null, s: 'c', b: null, o: { x: null, y: 'q' }, l: null, mixed: null },
    ];
    const objects: Record<string, string | Uint8Array> = {
      'rows.parquet': new Uint8Array(parquet),
      'rows.jsonl': `${jsonl.map((r) => JSON.stringify(r)).join('\n')}\n`,
      'rows.csv': 'id,name\n1,a\n2,\n',
    };
    for (const [Key, Body] of Object.entries(objects))
      await client.send(new PutObjectCommand({ Bucket: 'typed', Key, Body }));
    const secret = (
      await gw.request('POST', '/api/catalog/secrets/', {
        token: admin,
        json: {
          name: 's3',
          value: JSON.stringify({ aws_access_key_id: s3.accessKeyId, aws_secret_access_key: s3.secretAccessKey }),
        },
      })
    ).json;
    const read = async (key: string) => {
      const urn = await createDataset(gw, admin, {
        name: `typed/${key}`,
        platform: 's3',
        properties: { endpoint: s3.endpoint, secret_urn: secret },
      });
      return readAll(gw, admin, flight, { dataset_urn: urn });
    };

    const pq = await read('rows.parquet');
    assert.deepEqual(pq.schema, [
      ['i32', 'int32'],
      ['i64', 'int64'],
      ['f64', 'double'],
      ['f32', 'float'],
      ['ok', 'bool'],
      ['s', 'string'],
      ['at', 'timestamp[us, tz=UTC]'],
    ]);
    assert.deepEqual(pq.data, [
      {
        i32: 1,
        i64: '9007199254740993',
        f64: 0.5,
        f32: 1.5,
        ok: true,
        s: 'ü "q"',
        at: '2024-01-02T03:04:05.123000+00:00',
      },
      { i32: null, i64: null, f64: null, f32: null, ok: null, s: null, at: null },
      { i32: -2147483648, i64: -5, f64: -1e300, f32: -0.25, ok: false, s: '', at: '1969-12-31T23:59:59.999000+00:00' },
    ]);

    const jl = await read('rows.jsonl');
    assert.deepEqual(jl.schema, [
      ['n', 'double'],
      ['s', 'string'],
      ['b', 'bool'],
      ['o', 'struct<x: double, y: string>'],
      ['l', 'list<item: double>'],
      ['mixed', 'string'],
    ]);
    assert.deepEqual(jl.data, [
      { n: 1, s: 'a', b: true, o: { x: 1, y: 'p' }, l: [1, 2], mixed: '1' },
      { n: 2.5, s: null, b: false, o: null, l: [], mixed: 'two' },
      { n: null, s: 'c', b: null, o: { x: null, y: 'q' }, l: null, mixed: null },
    ]);

    const csv = await read('rows.csv');
    assert.deepEqual(csv.schema, [
      ['id', 'string'],
      ['name', 'string'],
    ]);
    assert.deepEqual(csv.data, [
      { id: '1', name: 'a' },
      { id: '2', name: '' },
    ]);
  },
);

test(
  'Hive over Flight: every declared Hive type, arrays and structs ' + 'included, is its Arrow type with exact values',
  async (t) => {
    const hive = await startHive(t);
    const { gw, admin, flight } = await gatewayWithFlight(t);
    const dir = join(hive.dataDir, 'typed');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'data.csv'),
      [
        '1,-7,300,9007199254740993,1.5,-0.25,true,ü x,2024-02-29,2024-01-02 03:04:05.123456,12.50,1|2|3,7|seven',
        '2,,,,,,,,,,,,',
        '3,127,-32768,-5,0,1e300,false,,1970-01-01,1969-12-31 23:59:59,-0.01,,0|',
      ].join('\n'),
    );
    await hive.query(
      `CREATE EXTERNAL TABLE typed (id INT, tiny TINYINT, small SMALLINT, ` +
        `big BIGINT, f FLOAT, d DOUBLE, ok BOOLEAN, s STRING,
      day DATE, at TIMESTAMP, price DECIMAL(10,2), nums ARRAY<INT>, pair STRUCT<a:INT,b:STRING>)
      ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' COLLECTION ITEMS TERMINATED BY '|' NULL DEFINED AS ''
      STORED AS TEXTFILE LOCATION 'file://${dir}'`,
    );
    const urn = await createDataset(gw, admin, {
      name: 'default.typed',
      platform: 'hive',
      properties: { host: hive.host, port: hive.port },
    });
    const got = await readAll(gw, admin, flight, { dataset_urn: urn });
    assert.deepEqual(got.schema, [
      ['id', 'int32'],
      ['tiny', 'int8'],
      ['small', 'int16'],
      ['big', 'int64'],
      ['f', 'float'],
      ['d', 'double'],
      ['ok', 'bool'],
      ['s', 'string'],
      ['day', 'date32[day]'],
      ['at', 'timestamp[us]'],
      ['price', 'decimal128(10, 2)'],
      ['nums', 'list<item: int32>'],
      ['pair', 'struct<a: int32, b: string>'],
    ]);
    const nulls = Object.fromEntries((got.schema ?? []).map(([name]) => [name, null]));
    assert.deepEqual(got.data, [
      {
        id: 1,
        tiny: -7,
        small: 300,
        big: '9007199254740993',
        f: 1.5,
        d: -0.25,
        ok: true,
        s: 'ü x',
        day: '2024-02-29',
        at: '2024-01-02T03:04:05.123456',
        price: '12.50',
        nums: [1, 2, 3],
        pair: { a: 7, b: 'seven' },
      },
      { ...nulls, id: 2 },
      {
        id: 3,
        tiny: 127,
        small: -32768,
        big: -5,
        f: 0,
        d: 1e300,
        ok: false,
        s: null,
        day: '1970-01-01',
        at: '1969-12-31T23:59:59',
        price: '-0.01',
        nums: null,
        pair: { a: 0, b: null },
      },
    ]);
  },
);

test(
  'Kafka over Flight: JSON message fields typed from their values, ' + 'metadata columns as integers and text',
  async (t) => {
    const kafka = await startKafka(t);
    const { gw, admin, flight } = await gatewayWithFlight(t);
    const bootstrapBrokers = [kafka.bootstrapServers];
    const admin_ = new Admin({ clientId: 'flight-test-admin', bootstrapBrokers });
    const producer = new Producer({
      clientId: 'flight-test',
      bootstrapBrokers,
      serializers: stringSerializers,
      idempotent: true,
    });
    const messages = Array.from({ length: 2500 }, (_, i) => ({
      id: i,
      name: `n${i}`,
      ok: i % 2 === 0,
      tags: i === 1 ? [] : [`t${i}`],
      at: { ms: i * 1000, zone: i === 2 ? null : 'UTC' },
      score: i % 10 === 3 ? null : i / 4,
    }));
    try {
      await admin_.createTopics({ topics: ['typed'], partitions: 1, replicas: 1 });
      await producer.send({
        messages: messages.map((m, i) => ({ topic: 'typed', partition: 0, key: `k${i}`, value: JSON.stringify(m) })),
      });
    } finally {
      await producer.close();
      await admin_.close();
    }
    const urn = await createDataset(gw, admin, {
      name: 'typed',
      platform: 'kafka',
      properties: { bootstrap_servers: kafka.bootstrapServers },
    });
    const got = await readAll(gw, admin, flight, {
      dataset_urn: urn,
      batch_size: 1000,
      options: { include_metadata: true },
    });
    assert.equal(got.batches, 3);
    assert.deepEqual(got.schema, [
      ['_topic', 'string'],
      ['_partition', 'int32'],
      ['_offset', 'int64'],
      ['_timestamp', 'timestamp[us, tz=UTC]'],
      ['_key', 'string'],
      ['id', 'double'],
      ['name', 'string'],
      ['ok', 'bool'],
      ['tags', 'list<item: string>'],
      ['at', 'struct<ms: double, zone: string>'],
      ['score', 'double'],
    ]);
    assert.equal(got.data.length, messages.length);
    for (const [i, row] of got.data.entries()) {
      const { _timestamp, ...rest } = row;
      assert.deepEqual(
        rest,
        { ...messages[i], _topic: 'typed', _partition: 0, _offset: i, _key: `k${i}` },
        `message ${i}`,
      );
      assert.ok(
        Math.abs(Date.parse(_timestamp as string) - Date.now()) < 600_000,
        `message ${i} timestamp ${_timestamp}`,
      );
    }
  },
);

test(
  'Slack over Flight: message fields typed from the first batch, nested ' + 'reactions as lists of structs',
  async (t) => {
    const token = 'xoxb-meshgate-flight-test';
    const messages = Array.from({ length: 1200 }, (_, i) => ({
      type: 'message',
      user: `U${i % 3}`,
      text: `m${i} ü`,
      ts: `${1_700_000_000 + 1200 - i}.000100`,
      reply_count: i % 2,
      is_locked: i % 5 === 0,
      reactions: i % 4 === 0 ? [{ name: 'tada', count: 2, users: ['U1', 'U2'] }] : [],
    }));
    const api = await startSlackApi(t, token, [{ id: 'C0FLIGHT', name: 'flight', messages }]);
    const { gw, admin, flight } = await gatewayWithFlight(t);
    const urn = await createDataset(gw, admin, {
      name: 'workspace',
      platform: 'slack',
      properties: { api_url: api.url },
    });
    const got = await readAll(gw, admin, flight, {
      dataset_urn: urn,
      batch_size: 500,
      options: { channels: ['C0FLIGHT'] },
      credential_override: token,
    });
    assert.equal(got.batches, 3);
    assert.deepEqual(got.schema, [
      ['type', 'string'],
      ['user', 'string'],
      ['text', 'string'],
      ['ts', 'string'],
      ['reply_count', 'double'],
      ['is_locked', 'bool'],
      ['reactions', 'list<item: struct<name: string, count: double, users: list<item: string>>>'],
    ]);
    assert.deepEqual(got.data, messages);
    assert.doesNotMatch(JSON.stringify(got), new RegExp(token));
  },
);
