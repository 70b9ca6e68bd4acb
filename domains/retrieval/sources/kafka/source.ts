/**
 * The Kafka source (platform `kafka`): a bounded read of one
 * topic. At the start the partitions' high-water marks are read; the read
 * ends there (or at `max_messages`), so a retrieval always ends even while
 * producers keep writing. Partitions are read one after another in number
 * order, each from its start position, with plain Fetch requests: no
 * consumer group is joined and no offset is committed unless
 * `commit_group` asks for it (then the next offsets of what was read are
 * committed for that group once the read ends). JSON object values become
 * rows (their keys the columns); other values become `{value}`.
 * Filters, offset and limit are applied in process. Every client of a read
 * connects with the dataset's TLS and SASL settings (security.ts).
 */
import type { Consumer } from '@platformatic/kafka';
import { RetrievalErrors } from '../../errors.ts';
import { abortableRead } from '../abortable.ts';
import type { SecretReader } from '../credentials.ts';
import { jsonType } from '../formats.ts';
import { lazyModule } from '../lazy.ts';
import { scanBatches } from '../scan.ts';
import type { Row, SchemaField, Source, SourceFactory } from '../types.ts';
import { KAFKA_READER_OPTIONS, type KafkaOptions, kafkaOptions } from './options.ts';
import { type KafkaSecurity, kafkaSecurity, kafkaSecurityError } from './security.ts';

interface Range {
  readonly partition: number;
  readonly leader: number;
  readonly start: bigint;
  /** Exclusive: the high-water mark observed when the read began. */
  readonly end: bigint;
}

interface Plan {
  readonly topicId: string;
  readonly ranges: Range[];
}

interface Message {
  readonly partition: number;
  readonly offset: bigint;
  readonly timestamp: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}

const kafkaSdk = lazyModule('Kafka', () => import('@platformatic/kafka'));
const PARTITION_MAX_BYTES = 4 << 20;
const CONTROL_BATCH = 0x20;
/** Typed by what Kafka defines (an int32 partition, an int64 offset, a timestamp in ms), not by sampling a value. */
const METADATA_FIELDS: SchemaField[] = [
  { name: '_topic', type: 'string' },
  { name: '_partition', type: 'integer' },
  { name: '_offset', type: 'bigint' },
  { name: '_timestamp', type: 'timestamp with time zone' },
  { name: '_key', type: 'string' },
];

/** A read's options and how its clients connect (TLS, SASL: security.ts). */
type KafkaRead = KafkaOptions & { readonly security: KafkaSecurity };

function classify(error: unknown): Error {
  if (error instanceof Error && error.name === 'ApiError') return error;
  const security = kafkaSecurityError(error);
  if (security) return security;
  const text = JSON.stringify(error, Object.getOwnPropertyNames(error ?? {})) ?? '';
  if (/unknown[_ ]topic/i.test(text)) return RetrievalErrors.make.source_not_found({ problem: 'no such topic' });
  return RetrievalErrors.make.source_unavailable({ problem: 'kafka broker unreachable or the read broke off' });
}

/** What every client of a read (Consumer, Admin) connects with. */
function clientSettings(options: KafkaRead) {
  const { brokers, security } = options;
  return { clientId: 'meshgate-retrieval', bootstrapBrokers: brokers, retries: 2, timeout: 10_000, ...security };
}

async function consumerFor(options: KafkaRead, tag: string): Promise<Consumer> {
  const { Consumer } = await kafkaSdk();
  // groupId is required by the client's constructor; it is never joined (no JoinGroup, no commit).
  return new Consumer({ ...clientSettings(options), retryDelay: 250, groupId: tag });
}

const closeConsumer = (consumer: Consumer) => void consumer.close(true).catch(() => {});

function clamp(value: bigint, low: bigint, high: bigint): bigint {
  if (value < low) return low;
  return value > high ? high : value;
}

async function startOffsets(
  consumer: Consumer,
  options: KafkaOptions,
  partitions: number[],
  earliest: bigint[],
  ends: bigint[],
): Promise<bigint[]> {
  const { start } = options;
  if (start.kind === 'timestamp') {
    const found = (await consumer.listOffsetsWithTimestamps({ topics: [options.topic], timestamp: start.ms })).get(
      options.topic,
    );
    return partitions.map((p) => {
      const offset = found?.get(p)?.offset ?? -1n;
      return offset < 0n ? (ends[p] as bigint) : offset;
    });
  }
  return partitions.map((p) => {
    const low = earliest[p] as bigint;
    const high = ends[p] as bigint;
    if (start.kind === 'earliest') return low;
    if (start.kind === 'tail') return clamp(high - BigInt(options.maxMessages ?? 0), low, high);
    return clamp(start.offsets.get(p) ?? low, low, high);
  });
}

async function plan(consumer: Consumer, options: KafkaOptions): Promise<Plan> {
  const metadata = await consumer.metadata({ topics: [options.topic], autocreateTopics: false });
  const topic = metadata.topics.get(options.topic);
  if (!topic) throw RetrievalErrors.make.source_not_found({ problem: 'no such topic' });
  const partitions = options.partitions ?? Array.from({ length: topic.partitionsCount }, (_, i) => i);
  const missing = partitions.find((p) => p >= topic.partitionsCount);
  if (missing !== undefined)
    throw RetrievalErrors.make.source_options_invalid({
      option: 'partitions',
      problem: `the topic has no partition ${missing}`,
    });
  const ends = (await consumer.listOffsets({ topics: [options.topic] })).get(options.topic) ?? [];
  const earliest = (await consumer.listOffsets({ topics: [options.topic], timestamp: -2n })).get(options.topic) ?? [];
  const starts = await startOffsets(consumer, options, partitions, earliest, ends);
  const ranges = partitions.map((partition, i) => ({
    partition,
    leader: topic.partitions[partition]?.leader ?? -1,
    start: starts[i] as bigint,
    end: ends[partition] as bigint,
  }));
  return { topicId: topic.id, ranges };
}

type FetchedPartition = Awaited<ReturnType<Consumer['fetch']>>['responses'][number]['partitions'][number];

/** One Fetch of one partition from `offset`, refused unless the broker answered it without error. */
async function fetchPartition(
  consumer: Consumer,
  topicId: string,
  range: Range,
  offset: bigint,
): Promise<FetchedPartition> {
  const response = await consumer.fetch({
    node: range.leader,
    maxWaitTime: 200,
    topics: [
      {
        topicId,
        partitions: [
          {
            partition: range.partition,
            fetchOffset: offset,
            currentLeaderEpoch: -1,
            lastFetchedEpoch: -1,
            partitionMaxBytes: PARTITION_MAX_BYTES,
          },
        ],
      },
    ],
  });
  // The client keeps an incremental fetch session per broker: the answer may hold other partitions too.
  const part = response.responses
    .find((t) => t.topicId === topicId)
    ?.partitions.find((p) => p.partitionIndex === range.partition);
  if (part?.errorCode !== 0)
    throw RetrievalErrors.make.source_unavailable({
      problem: `kafka fetch failed (error code ${part?.errorCode ?? 'none'})`,
    });
  return part;
}

/** The messages of a Fetch answer within [from, range.end), and the offset after its last batch. */
function messagesOf(part: FetchedPartition, range: Range, from: bigint): { messages: Message[]; advanced: bigint } {
  const messages: Message[] = [];
  let advanced = from;
  for (const batch of part.records ?? []) {
    advanced = batch.firstOffset + BigInt(batch.lastOffsetDelta) + 1n;
    if (batch.attributes & CONTROL_BATCH) continue; // transaction markers are not messages
    for (const record of batch.records) {
      const offset = batch.firstOffset + BigInt(record.offsetDelta);
      if (offset < from || offset >= range.end) continue;
      messages.push({
        partition: range.partition,
        offset,
        timestamp: batch.firstTimestamp + record.timestampDelta,
        key: record.key,
        value: record.value,
      });
    }
  }
  return { messages, advanced };
}

/** One partition from range.start to range.end, a Fetch response at a time. */
async function* partitionMessages(
  consumer: Consumer,
  topicId: string,
  range: Range,
  signal: AbortSignal,
): AsyncGenerator<Message[]> {
  let next = range.start;
  while (next < range.end) {
    signal.throwIfAborted();
    const { messages, advanced } = messagesOf(await fetchPartition(consumer, topicId, range, next), range, next);
    // Nothing below the high-water mark came back: the log moved (retention); end rather than spin.
    if (advanced <= next) return;
    next = advanced;
    if (messages.length > 0) yield messages;
  }
}

function decode(message: Message, options: KafkaOptions): Row {
  const text = message.value === null ? null : message.value.toString('utf8');
  let value: unknown = text;
  if (options.valueFormat === 'json' && text !== null) {
    try {
      value = JSON.parse(text);
    } catch {
      throw RetrievalErrors.make.source_unavailable({
        problem: `message ${message.partition}/${message.offset} is not JSON; use options.value_format "text"`,
      });
    }
  }
  const row: Row = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Row) : { value };
  if (!options.includeMetadata) return row;
  return {
    _topic: options.topic,
    _partition: message.partition,
    _offset: Number(message.offset),
    _timestamp: new Date(Number(message.timestamp)).toISOString(),
    _key: message.key === null ? null : message.key.toString('utf8'),
    ...row,
  };
}

/** Rows of the whole bounded read; `read` records the next offset per partition for commit_group. */
async function* topicRows(
  consumer: Consumer,
  options: KafkaOptions,
  signal: AbortSignal,
  read: Map<number, bigint>,
): AsyncGenerator<Row[]> {
  const { topicId, ranges } = await plan(consumer, options);
  let remaining = options.maxMessages ?? Number.POSITIVE_INFINITY;
  for (const range of ranges) {
    for await (const messages of partitionMessages(consumer, topicId, range, signal)) {
      const taken = messages.slice(0, remaining);
      remaining -= taken.length;
      const last = taken.at(-1);
      if (last) read.set(last.partition, last.offset + 1n);
      yield taken.map((m) => decode(m, options));
      if (remaining <= 0) return;
    }
  }
}

async function commit(options: KafkaRead, group: string, read: Map<number, bigint>): Promise<void> {
  if (read.size === 0) return;
  const { Admin } = await kafkaSdk();
  const admin = new Admin(clientSettings(options));
  try {
    const partitionOffsets = [...read].map(([partition, offset]) => ({ partition, offset }));
    await admin.alterConsumerGroupOffsets({ groupId: group, topics: [{ name: options.topic, partitionOffsets }] });
  } finally {
    await admin.close().catch(() => {});
  }
}

async function schemaOf(options: KafkaRead, tag: string): Promise<SchemaField[]> {
  const consumer = await consumerFor(options, tag);
  try {
    for await (const rows of topicRows(
      consumer,
      { ...options, maxMessages: 1 },
      new AbortController().signal,
      new Map(),
    )) {
      const first = rows[0] ?? {};
      return Object.entries(first).map(
        ([name, value]) => METADATA_FIELDS.find((f) => f.name === name) ?? { name, type: jsonType(value) },
      );
    }
    return options.includeMetadata ? METADATA_FIELDS : [];
  } catch (error) {
    throw classify(error);
  } finally {
    closeConsumer(consumer);
  }
}

export function kafkaSources(secrets: () => SecretReader | undefined): SourceFactory {
  return {
    platforms: ['kafka'],
    readerOptions: KAFKA_READER_OPTIONS,
    describe: (input) => ({ path: kafkaOptions(input).topic, format: kafkaOptions(input).valueFormat }),
    create(input): Source {
      const options: KafkaRead = { ...kafkaOptions(input), security: kafkaSecurity(input, secrets()) };
      return {
        schema: () => schemaOf(options, input.tag),
        read: (request) =>
          abortableRead(
            request.signal,
            () => consumerFor(options, input.tag),
            closeConsumer,
            async function* (consumer) {
              const read = new Map<number, bigint>();
              yield* scanBatches(topicRows(consumer, options, request.signal, read), request);
              if (options.commitGroup) await commit(options, options.commitGroup, read);
            },
            classify,
          ),
      };
    },
  };
}
