import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka';
import { startKafka } from '../../../helpers/peers/kafka.ts';

test('kafka peer: a KRaft broker on loopback takes messages and hands them back from the beginning', async (t) => {
  const started = performance.now();
  const kafka = await startKafka(t);
  t.diagnostic(`kafka started in ${Math.round(performance.now() - started)} ms at ${kafka.bootstrapServers}`);
  const bootstrapBrokers = [kafka.bootstrapServers];

  const admin = new Admin({ clientId: 'smoke-admin', bootstrapBrokers });
  t.after(() => admin.close());
  await admin.createTopics({ topics: ['events'], partitions: 2, replicas: 1 });

  const producer = new Producer({ clientId: 'smoke-producer', bootstrapBrokers, serializers: stringSerializers });
  t.after(() => producer.close());
  const sent = [0, 1, 2, 3].map((i) => ({
    topic: 'events',
    key: `k${i}`,
    value: JSON.stringify({ i }),
    partition: i % 2,
  }));
  await producer.send({ messages: sent });

  const consumer = new Consumer({
    groupId: 'smoke',
    clientId: 'smoke-consumer',
    bootstrapBrokers,
    deserializers: stringDeserializers,
  });
  t.after(() => consumer.close(true));
  const stream = await consumer.consume({ topics: ['events'], mode: 'earliest', autocommit: false, maxWaitTime: 200 });
  // Delivery is at-least-once on both sides: a producer retry under load can store a message twice,
  // and a group rebalance can hand a partition back from `earliest` (nothing is committed). So wait
  // until every sent (partition, key) has arrived, and compare those.
  const byMessage = new Map<string, { key: string; value: string; partition: number }>();
  for await (const message of stream) {
    byMessage.set(`${message.partition}:${message.key}`, {
      key: message.key,
      value: message.value,
      partition: message.partition,
    });
    if (byMessage.size === sent.length) break;
  }
  const received = [...byMessage.values()];
  const byKey = (a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key);
  assert.deepEqual(
    received.sort(byKey),
    sent.map(({ key, value, partition }) => ({ key, value, partition })),
  );
});
