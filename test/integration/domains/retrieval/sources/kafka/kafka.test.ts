/**
 * The Kafka source against a real Apache Kafka broker (KRaft, startKafka):
 * the source contract on a JSON topic, start positions (beginning, offsets,
 * timestamp, tail), partitions, max_messages, value formats and metadata
 * columns through the gateway, a read that ends at the high-water marks
 * while a producer keeps writing, no committed offsets unless
 * `commit_group` asks, and the broker stopped mid-stream.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin, Producer, stringSerializers } from '@platformatic/kafka';
import { kafkaSources } from '../../../../../../domains/retrieval/sources/kafka/source.ts';
import type { SourceInput } from '../../../../../../domains/retrieval/sources/types.ts';
import { runSourceContract } from '../../../../../contract/source.contract.ts';
import { startTestGateway, type TestGateway } from '../../../../../helpers/gateway.ts';
import { type KafkaPeer, startKafka } from '../../../../../helpers/peers/kafka.ts';
import { createDataset, createJob, readSse, sseRows } from '../../../../../helpers/retrieval.ts';
import { sharedPeer, streamThroughOutage } from '../../../../../helpers/retrieval-sources.ts';
import { waitFor } from '../../../../../helpers/wait.ts';

const kafka = sharedPeer(startKafka);
let topics = 0;

interface Sent {
  value: string;
  key?: string;
  partition?: number;
}

/** A fresh topic with `partitions` partitions holding the messages, in order. */
async function topicWith(peer: KafkaPeer, messages: readonly Sent[], partitions = 1): Promise<string> {
  const topic = `t${process.pid}-${++topics}`;
  const bootstrapBrokers = [peer.bootstrapServers];
  const admin = new Admin({ clientId: 'test-admin', bootstrapBrokers });
  // Idempotent: a retried send right after topic creation must not write a message twice.
  const producer = new Producer({
    clientId: 'test-producer',
    bootstrapBrokers,
    serializers: stringSerializers,
    idempotent: true,
  });
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
    for (let i = 0; i < messages.length; i += 5000) {
      await producer.send({ messages: messages.slice(i, i + 5000).map((m) => ({ topic, partition: 0, ...m })) });
    }
  } finally {
    await producer.close();
    await admin.close();
  }
  return topic;
}

function input(peer: KafkaPeer, topic: string, options: Record<string, unknown> = {}): SourceInput {
  return {
    urn: `urn:li:dataset:(urn:li:dataPlatform:kafka,${topic},PROD)`,
    platform: 'kafka',
    name: topic,
    properties: { bootstrap_servers: peer.bootstrapServers },
    options,
    credentialOverride: null,
    formatHint: null,
    tag: 'meshgate-retrieval:kafka-test',
  };
}

runSourceContract('kafka json', async (_t, rows) => {
  const peer = await kafka();
  const topic = await topicWith(
    peer,
    rows.map((r) => ({ value: JSON.stringify(r) })),
  );
  return kafkaSources(() => undefined).create(input(peer, topic));
});

async function setup(
  t: { after(fn: () => unknown): void },
  peer: KafkaPeer,
): Promise<{
  gw: TestGateway;
  admin: string;
  urn: (topic: string, extra?: Record<string, unknown>) => Promise<string>;
}> {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  // With `extra` properties, another dataset over the same topic.
  const urn = (topic: string, extra: Record<string, unknown> = {}) => {
    const name = Object.keys(extra).length > 0 ? `${topic}-${Object.keys(extra).join('-')}` : topic;
    return createDataset(gw, admin, {
      name,
      platform: 'kafka',
      properties: { bootstrap_servers: peer.bootstrapServers, topic, ...extra },
    });
  };
  return { gw, admin, urn };
}

test('kafka start positions, partitions, max_messages, value formats and metadata columns', async (t) => {
  const peer = await kafka();
  const messages: Sent[] = Array.from({ length: 30 }, (_, i) => ({
    key: `k${i}`,
    value: JSON.stringify({ n: i, even: i % 2 === 0 }),
    partition: i % 3,
  }));
  const before = Date.now();
  const topic = await topicWith(peer, messages, 3);
  const { gw, admin, urn: urnOf } = await setup(t, peer);
  const urn = await urnOf(topic);
  const read = async (options: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    (await createJob(gw, admin, { dataset_urn: urn, options, ...extra })).inline.data as Record<string, unknown>[];
  const inPartition = (p: number) => messages.filter((m) => m.partition === p).map((m) => JSON.parse(m.value));

  assert.deepEqual(
    await read({}),
    [...inPartition(0), ...inPartition(1), ...inPartition(2)],
    'partition by partition, each in offset order',
  );
  assert.deepEqual(await read({ partitions: [2, 1] }), [...inPartition(1), ...inPartition(2)]);
  assert.deepEqual(await read({ partitions: [1], offsets: { 1: 7 } }), inPartition(1).slice(7));
  assert.deepEqual(await read({ max_messages: 4, partitions: [0] }), inPartition(0).slice(0, 4));
  assert.deepEqual(await read({ from_beginning: false, max_messages: 2, partitions: [2] }), inPartition(2).slice(-2));
  assert.deepEqual(
    await read({ start_timestamp: new Date(before - 60_000).toISOString(), partitions: [0] }),
    inPartition(0),
  );
  assert.deepEqual(await read({ start_timestamp: Date.now() + 3_600_000 }), []);
  assert.deepEqual(
    await read({ partitions: [0] }, { filters: { even: true }, columns: ['n'], offset: 1, limit_rows: 2 }),
    [{ n: 6 }, { n: 12 }],
  );

  const text = await read({ value_format: 'text', include_metadata: true, partitions: [1], max_messages: 1 });
  assert.equal(text.length, 1);
  const [first] = text as [Record<string, unknown>];
  assert.deepEqual(
    { ...first, _timestamp: undefined },
    { _topic: topic, _partition: 1, _offset: 0, _timestamp: undefined, _key: 'k1', value: messages[1]?.value },
  );
  assert.ok(Date.parse(first._timestamp as string) >= before - 1000);
});

test(
  'kafka reads end at the high-water marks seen at start while a ' +
    'producer keeps writing; offsets are committed only when asked',
  async (t) => {
    const peer = await kafka();
    const topic = await topicWith(
      peer,
      Array.from({ length: 5000 }, (_, i) => ({ value: JSON.stringify({ i }) })),
    );
    const { gw, admin, urn: urnOf } = await setup(t, peer);
    const urn = await urnOf(topic);
    const producer = new Producer({
      clientId: 'busy',
      bootstrapBrokers: [peer.bootstrapServers],
      serializers: stringSerializers,
    });
    t.after(() => producer.close());
    let writing = true;
    let written = 0;
    const busy = (async () => {
      for (let i = 5000; writing; i++) {
        await producer.send({ messages: [{ topic, value: JSON.stringify({ i }) }] });
        written++;
        await sleep(5);
      }
    })();
    await waitFor(() => written >= 10, { what: 'the producer writing past the first 5000' });
    const job = await createJob(gw, admin, { dataset_urn: urn, transport: 'sse', batch_size: 100 });
    const rows = sseRows(await readSse(gw, job.job_id, admin));
    writing = false;
    await busy;
    assert.ok(rows.length >= 5000, `read ${rows.length}`);
    assert.deepEqual(
      rows.map((r) => r.i),
      rows.map((_, i) => i),
      'a contiguous prefix of the log',
    );

    const kafkaAdmin = new Admin({ clientId: 'check', bootstrapBrokers: [peer.bootstrapServers] });
    t.after(() => kafkaAdmin.close());
    const groupsWithOffsets = async () => [...(await kafkaAdmin.listGroups()).keys()];
    assert.deepEqual(await groupsWithOffsets(), [], 'no consumer group was created or committed to');
    // Committing is the dataset owner's setting (a write to a consumer group), never a reader's option.
    const committing = await urnOf(topic, { commit_group: 'analytics' });
    await createJob(gw, admin, {
      dataset_urn: committing,
      options: { max_messages: 1234 },
      transport: 'inline',
      limit_rows: 10,
    });
    const [committed] = await kafkaAdmin.listConsumerGroupOffsets({ groups: ['analytics'] });
    const offsets = committed?.topics.find((x) => x.name === topic)?.partitions.map((p) => p.committedOffset);
    assert.ok(offsets && offsets.length === 1 && (offsets[0] as bigint) >= 10n, `committed ${offsets}`);
  },
);

test('kafka bad options are 422 source_options_invalid; an unknown topic is 404', async (t) => {
  const peer = await kafka();
  const { gw, admin, urn: urnOf } = await setup(t, peer);
  const topic = await topicWith(peer, [{ value: 'not json' }]);
  const urn = await urnOf(topic);
  const bad: [Record<string, unknown>, string][] = [
    [{ max_messages: 0 }, 'max_messages'],
    [{ offsets: { zero: 1 } }, 'offsets'],
    [{ partitions: [7] }, 'partitions'],
    [{ value_format: 'avro' }, 'value_format'],
    [{ start_timestamp: 'yesterday' }, 'start_timestamp'],
    [{ from_beginning: 'yes' }, 'from_beginning'],
  ];
  for (const [options, option] of bad) {
    const res = await gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: urn, options } });
    assert.equal(res.status, 422, `${option}: ${res.text}`);
    assert.deepEqual([res.json.detail.reason, res.json.detail.option], ['source_options_invalid', option]);
  }
  const notJson = await gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: urn } });
  assert.equal(notJson.status, 502);
  assert.match(notJson.text, /value_format/);
  assert.deepEqual((await createJob(gw, admin, { dataset_urn: urn, options: { value_format: 'text' } })).inline.data, [
    { value: 'not json' },
  ]);
  const noPort = await gw.request('POST', '/api/retrieval/jobs', {
    token: admin,
    json: { dataset_urn: await urnOf(topic, { bootstrap_servers: 'no port here' }) },
  });
  assert.deepEqual([noPort.status, noPort.json.detail.option], [422, 'bootstrap_servers']);
  const missing = await gw.request('POST', '/api/retrieval/jobs', {
    token: admin,
    json: { dataset_urn: await urnOf('no-such-topic') },
  });
  assert.equal(missing.status, 404, missing.text);
  assert.equal(missing.json.detail.reason, 'source_not_found');
});

test('kafka broker stopped mid-stream: an error event, the job FAILED with source_unavailable, no hang', async (t) => {
  const peer = await startKafka(t);
  const topic = await topicWith(
    peer,
    Array.from({ length: 150_000 }, (_, i) => ({ value: JSON.stringify({ i, pad: 'z'.repeat(60) }) })),
  );
  const { gw, admin, urn: urnOf } = await setup(t, peer);
  const job = await createJob(gw, admin, { dataset_urn: await urnOf(topic), transport: 'sse', batch_size: 200 });
  const outcome = await streamThroughOutage(gw, admin, job.job_id, () => peer.stop());
  assert.ok(outcome.rows < 150_000, `stopped after ${outcome.rows} rows`);
  assert.equal(outcome.last.event, 'error');
  assert.equal(outcome.last.data.reason, 'source_unavailable');
  assert.deepEqual(
    { status: outcome.job.status, error: outcome.job.error },
    { status: 'FAILED', error: 'source_unavailable' },
  );
});
