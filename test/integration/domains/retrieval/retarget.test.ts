/**
 * A read narrows a dataset, never re-targets it (files, moto S3, a real
 * Kafka broker, the local Slack API server): a viewer's `options` may only
 * hold the source's narrowing keys, within the dataset's own values; a
 * location key (path, bucket, key, topic, brokers, channel outside the
 * dataset, API URL …) is refused 422 `option_not_allowed`. Stored
 * credentials never follow a caller's endpoint: an attacker's listener on
 * loopback sees no connection (egress.test.ts: the endpoints an operator allows).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Admin, Producer, stringSerializers } from '@platformatic/kafka';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { startKafka } from '../../../helpers/peers/kafka.ts';
import { s3ClientFor, startS3 } from '../../../helpers/peers/s3.ts';
import { createDataset, createJob, grantViewer } from '../../../helpers/retrieval.ts';
import { assertNotAllowed, recordingListener } from '../../../helpers/retrieval-sources.ts';
import { startSlackApi } from '../../../helpers/slack-api.ts';

async function viewerOf(gw: TestGateway, urns: string[]): Promise<string> {
  const viewer = await gw.userToken('viewer');
  for (const urn of urns) grantViewer(gw, urn, viewer.id);
  return viewer.token;
}

const firstKey = (options: Record<string, unknown>) => Object.keys(options)[0] as string;

test('files: no option re-targets a file dataset', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-retarget-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'orders.jsonl'), '{"id":1}\n{"id":2}\n');
  writeFileSync(join(root, 'salaries.jsonl'), '{"pay":1000000}\n');
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, {
    name: 'orders',
    platform: 'file',
    properties: { path: join(root, 'orders.jsonl') },
  });
  const token = await viewerOf(gw, [urn]);
  assert.deepEqual((await createJob(gw, token, { dataset_urn: urn, limit_rows: 1 })).inline.data, [{ id: 1 }]);
  const salaries = join(root, 'salaries.jsonl');
  const location = [
    { path: salaries },
    { PATH: salaries },
    { location: salaries },
    { file: { path: salaries } },
    { format: 'csv' },
  ];
  for (const options of location) {
    for (const transport of ['inline', 'sse', 'grpc']) {
      await assertNotAllowed(gw, token, { dataset_urn: urn, transport, options }, firstKey(options), 'file');
    }
  }
});

test('s3: options name no bucket or key; stored keys go only to the dataset endpoint', async (t) => {
  const peer = await startS3(t);
  const attacker = await recordingListener(t);
  const client = s3ClientFor(peer, t);
  await client.send(new CreateBucketCommand({ Bucket: 'shop' }));
  await client.send(new PutObjectCommand({ Bucket: 'shop', Key: 'orders.jsonl', Body: '{"id":1}\n' }));
  await client.send(new PutObjectCommand({ Bucket: 'shop', Key: 'salaries.jsonl', Body: '{"pay":1}\n' }));
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  // moto takes any key pair: the stored one is recognisable in what a listener would receive.
  const stored = {
    aws_access_key_id: 'AKIAOWNERSTORED00001',
    aws_secret_access_key: 'owner-secret-key',
    aws_session_token: 'OWNER-SESSION-TOKEN',
  };
  const secret = (
    await gw.request('POST', '/api/catalog/secrets/', {
      token: admin,
      json: { name: 's3', value: JSON.stringify(stored) },
    })
  ).json;
  const properties = { endpoint: peer.endpoint, secret_urn: secret };
  const urn = await createDataset(gw, admin, { name: 'shop/orders.jsonl', platform: 's3', properties });
  const token = await viewerOf(gw, [urn]);
  assert.deepEqual(
    (await createJob(gw, token, { dataset_urn: urn })).inline.data,
    [{ id: 1 }],
    'stored keys work at the dataset endpoint',
  );

  const location = [
    { key: 'salaries.jsonl' },
    { bucket: 'other' },
    { prefix: '' },
    { path: 'shop/salaries.jsonl' },
    { Endpoint_Url: attacker.url },
  ];
  for (const options of location)
    await assertNotAllowed(gw, token, { dataset_urn: urn, options }, firstKey(options), 's3');
  const elsewhere = JSON.stringify({ key: 'salaries.jsonl' });
  await assertNotAllowed(gw, token, { dataset_urn: urn, credential_override: elsewhere }, 'key', 's3');
  const incomplete = [
    { endpoint_url: attacker.url },
    { endpoint: attacker.url, region: 'us-east-1' },
    { endpoint_override: attacker.url, aws_access_key_id: 'AKIACALLER000000001' },
    { aws_session_token: 'caller-token' },
    { aws_secret_access_key: 'caller-secret' },
  ];
  for (const override of incomplete) {
    const json = { dataset_urn: urn, credential_override: JSON.stringify(override) };
    const res = await gw.request('POST', '/api/retrieval/jobs', { token, json });
    assert.equal(res.status, 422, res.text);
    assert.equal(res.json.detail.reason, 'credential_override_incomplete');
  }
  assert.equal(attacker.connections(), 0);

  // A complete override naming an endpoint the operator has not listed is refused before any connection.
  const own = {
    endpoint_url: attacker.url,
    aws_access_key_id: 'AKIACALLER000000001',
    aws_secret_access_key: 'caller-secret',
  };
  const res = await gw.request('POST', '/api/retrieval/jobs', {
    token,
    json: { dataset_urn: urn, credential_override: JSON.stringify(own) },
  });
  assert.deepEqual([res.status, res.json.detail.reason], [422, 'endpoint_not_allowed'], res.text);
  assert.equal(attacker.connections(), 0);
});

test(
  'kafka: options name no topic or brokers and commit nothing; ' + 'partitions and caps stay within the dataset',
  async (t) => {
    const peer = await startKafka(t);
    const attacker = await recordingListener(t);
    const bootstrapBrokers = [peer.bootstrapServers];
    const admin = new Admin({ clientId: 'retarget-admin', bootstrapBrokers });
    t.after(() => admin.close());
    const producer = new Producer({
      clientId: 'retarget-producer',
      bootstrapBrokers,
      serializers: stringSerializers,
      idempotent: true,
    });
    try {
      await admin.createTopics({ topics: ['orders', 'salaries'], partitions: 2, replicas: 1 });
      const orders = [0, 1, 2, 3].map((n) => ({ topic: 'orders', partition: n % 2, value: JSON.stringify({ n }) }));
      await producer.send({ messages: [...orders, { topic: 'salaries', partition: 0, value: '{"pay":1}' }] });
    } finally {
      await producer.close();
    }
    const gw = await startTestGateway(t);
    const owner = await gw.adminToken();
    const base = { bootstrap_servers: peer.bootstrapServers };
    const urn = await createDataset(gw, owner, {
      name: 'orders',
      platform: 'kafka',
      properties: { ...base, partitions: [0], max_messages: 1 },
    });
    const pinned = { ...base, topic: 'orders', start_timestamp: 0 };
    const open = await createDataset(gw, owner, { name: 'orders-all', platform: 'kafka', properties: pinned });
    const token = await viewerOf(gw, [urn, open]);
    const rows = async (dataset: string, options: Record<string, unknown>) =>
      (await createJob(gw, token, { dataset_urn: dataset, options })).inline.data;

    assert.deepEqual(
      await rows(urn, { partitions: [0], max_messages: 50 }),
      [{ n: 0 }],
      "the dataset's cap wins over a larger one",
    );
    assert.deepEqual(
      await rows(open, { partitions: [1], max_messages: 1 }),
      [{ n: 1 }],
      'a dataset without partitions lets a reader pick',
    );
    const broker = `${attacker.host}:${attacker.port}`;
    const refused: [string, Record<string, unknown>][] = [
      [urn, { topic: 'salaries' }],
      [urn, { Topic: 'salaries' }],
      [urn, { bootstrap_servers: broker }],
      [urn, { brokers: [broker] }],
      [urn, { commit_group: 'payments-consumer' }],
      [urn, { partitions: [1] }],
      [open, { from_beginning: true }],
      [open, { offsets: { 0: 0 } }],
    ];
    for (const [dataset, options] of refused)
      await assertNotAllowed(gw, token, { dataset_urn: dataset, options }, firstKey(options), 'kafka');
    assert.equal(attacker.connections(), 0);
    assert.deepEqual([...(await admin.listGroups()).keys()], [], 'no consumer group was committed to');
  },
);

test('slack: channels stay within the dataset; the stored token never goes to a caller-named API', async (t) => {
  const stored = 'xoxb-owner-stored-token-51';
  const api = await startSlackApi(t, stored, [
    { id: 'C0GENERAL', name: 'general', messages: [{ type: 'message', text: 'hi', ts: '1700000000.000100' }] },
    { id: 'C0EXEC', name: 'exec', messages: [{ type: 'message', text: 'plans', ts: '1700000000.000200' }] },
  ]);
  const attacker = await recordingListener(t);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const secret = (
    await gw.request('POST', '/api/catalog/secrets/', { token: admin, json: { name: 'slack', value: stored } })
  ).json;
  const properties = { api_url: api.url, secret_urn: secret, channels: ['general'] };
  const urn = await createDataset(gw, admin, { name: 'general', platform: 'slack', properties });
  const token = await viewerOf(gw, [urn]);
  const narrowed = await createJob(gw, token, {
    dataset_urn: urn,
    options: { channels: ['general'], max_messages: 5 },
  });
  assert.equal(narrowed.inline.data.length, 1);
  const apiUrl = `${attacker.url}/api/`;
  const location = [
    { channels: ['exec'] },
    { channels: ['general', 'C0EXEC'] },
    { api_url: apiUrl },
    { channel: 'exec' },
    { token: 'x' },
  ];
  for (const options of location)
    await assertNotAllowed(gw, token, { dataset_urn: urn, options }, firstKey(options), 'slack');
  // A cap beyond the safe integers is no cap, never "no limit": a malformed option.
  for (const max of [1e300, 2 ** 53]) {
    const res = await gw.request('POST', '/api/retrieval/jobs', {
      token,
      json: { dataset_urn: urn, options: { max_messages: max } },
    });
    assert.deepEqual(
      [res.status, res.json.detail.reason, res.json.detail.option],
      [422, 'source_options_invalid', 'max_messages'],
    );
  }
  const override = JSON.stringify({ token: 'xoxb-caller-1', api_url: apiUrl });
  await assertNotAllowed(gw, token, { dataset_urn: urn, credential_override: override }, 'api_url', 'slack');
  assert.equal(attacker.connections(), 0);
  assert.ok(!attacker.received().includes(stored));
  assert.ok(
    api.calls.every((c) => c.params.channel !== 'C0EXEC'),
    'the channel outside the dataset was never read',
  );
});
