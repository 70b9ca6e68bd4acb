/**
 * Options of a Kafka retrieval. Where the topic lives is the dataset's
 * alone (properties `bootstrap_servers`, `topic`, default the URN name), as
 * is `commit_group`, the only way offsets are ever committed (a write to a
 * consumer group, not a narrowing). A reader narrows the read (`KAFKA_READER_OPTIONS`):
 * where to start (`from_beginning`, per-partition `offsets`, or
 * `start_timestamp`), which `partitions`, `max_messages`, how to decode
 * values (`value_format` json | text), whether to add message metadata
 * columns (`include_metadata`); the dataset's properties are the defaults.
 * Malformed values are a 422 `source_options_invalid` naming the option.
 */
import { RetrievalErrors } from '../../errors.ts';
import {
  AT_MOST,
  CHOICE,
  COUNT_PROBLEM,
  isCount,
  type ReaderOptionTable,
  SUBSET,
  unpinned,
} from '../reader-options.ts';
import type { SourceInput } from '../types.ts';

export type StartAt =
  | { kind: 'earliest' }
  | { kind: 'tail' }
  | { kind: 'offsets'; offsets: ReadonlyMap<number, bigint> }
  | { kind: 'timestamp'; ms: bigint };

export interface KafkaOptions {
  readonly brokers: string[];
  readonly topic: string;
  /** null = every partition of the topic. */
  readonly partitions: number[] | null;
  readonly start: StartAt;
  /** Messages read before filters; null = up to the high-water marks seen at start. */
  readonly maxMessages: number | null;
  readonly valueFormat: 'json' | 'text';
  readonly includeMetadata: boolean;
  readonly commitGroup: string | null;
}

const START = unpinned('from_beginning', 'offsets', 'start_timestamp');

/** Partitions within the dataset's, at most its messages, and a start it does not fix. */
export const KAFKA_READER_OPTIONS: ReaderOptionTable = {
  partitions: SUBSET,
  max_messages: AT_MOST,
  from_beginning: START,
  offsets: START,
  start_timestamp: START,
  value_format: CHOICE,
  include_metadata: unpinned(),
};

const invalid = (option: string, problem: string) => RetrievalErrors.make.source_options_invalid({ option, problem });

function brokersOf(value: unknown): string[] {
  const list = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : [];
  const brokers = list.map((b) => (typeof b === 'string' ? b.trim() : '')).filter(Boolean);
  if (brokers.length === 0 || !brokers.every((b) => /^[\w.-]+:\d{1,5}$|^\[[\da-f:]+\]:\d{1,5}$/i.test(b))) {
    throw invalid('bootstrap_servers', 'a "host:port" list is required');
  }
  return brokers;
}

function partitionsOf(value: unknown): number[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.length === 0 || !value.every((p) => Number.isInteger(p) && p >= 0))
    throw invalid('partitions', 'a non-empty list of partition numbers');
  return [...new Set(value as number[])].sort((a, b) => a - b);
}

function offsetsOf(value: unknown): ReadonlyMap<number, bigint> {
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw invalid('offsets', 'an object {"<partition>": <offset>}');
  const offsets = new Map<number, bigint>();
  for (const [partition, offset] of Object.entries(value)) {
    if (
      !/^\d+$/.test(partition) ||
      !(typeof offset === 'number' || typeof offset === 'string') ||
      !/^\d+$/.test(String(offset))
    ) {
      throw invalid('offsets', 'partition numbers mapped to non-negative offsets');
    }
    offsets.set(Number(partition), BigInt(offset));
  }
  return offsets;
}

function timestampOf(value: unknown): bigint {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms) || ms < 0) throw invalid('start_timestamp', 'an ISO-8601 time or epoch milliseconds');
  return BigInt(Math.trunc(ms));
}

function startOf(get: (key: string) => unknown): StartAt {
  if (get('offsets') !== undefined) return { kind: 'offsets', offsets: offsetsOf(get('offsets')) };
  if (get('start_timestamp') !== undefined) return { kind: 'timestamp', ms: timestampOf(get('start_timestamp')) };
  const fromBeginning = get('from_beginning') ?? true;
  if (typeof fromBeginning !== 'boolean') throw invalid('from_beginning', 'a boolean');
  return fromBeginning ? { kind: 'earliest' } : { kind: 'tail' };
}

function flag(value: unknown, option: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw invalid(option, 'a boolean');
  return value;
}

export function kafkaOptions(input: SourceInput): KafkaOptions {
  // The reader's options, already narrowed against the properties (reader-options.ts), beat them.
  const get = (key: string) => input.options[key] ?? input.properties[key];
  const topic = input.properties.topic ?? input.name;
  if (typeof topic !== 'string' || !/^[\w.-]{1,249}$/.test(topic)) throw invalid('topic', 'a Kafka topic name');
  const max = get('max_messages');
  if (max !== undefined && max !== null && !isCount(max)) throw invalid('max_messages', COUNT_PROBLEM);
  const valueFormat = get('value_format') ?? 'json';
  if (valueFormat !== 'json' && valueFormat !== 'text') throw invalid('value_format', '"json" or "text"');
  const group = input.properties.commit_group;
  if (group !== undefined && (typeof group !== 'string' || group === ''))
    throw invalid('commit_group', 'a consumer group id');
  return {
    brokers: brokersOf(input.properties.bootstrap_servers),
    topic,
    partitions: partitionsOf(get('partitions')),
    start: startOf(get),
    maxMessages: (max as number | undefined) ?? null,
    valueFormat,
    includeMetadata: flag(get('include_metadata'), 'include_metadata'),
    commitGroup: (group as string | undefined) ?? null,
  };
}
