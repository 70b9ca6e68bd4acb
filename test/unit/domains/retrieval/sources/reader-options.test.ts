/**
 * The reader-options check, table-driven: keys off a source's table are
 * refused however they are spelled or nested, each rule narrows against the
 * dataset's own value, nothing reaches a source through a prototype, and a
 * credential_override carries credentials only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KAFKA_READER_OPTIONS, kafkaOptions } from '../../../../../domains/retrieval/sources/kafka/options.ts';
import { credentialFields, readerOptions } from '../../../../../domains/retrieval/sources/reader-options.ts';
import type { SourceInput } from '../../../../../domains/retrieval/sources/types.ts';
import { ApiError } from '../../../../../gateway/errors/api-error.ts';

type Options = Record<string, unknown>;

function refusal(run: () => unknown): { reason: string; key: unknown; in: unknown } {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ApiError);
    return { reason: error.reason, key: error.extra.key, in: error.extra.in };
  }
  assert.fail('expected a refusal');
}

const kafka = (options: Options, properties: Options = {}) =>
  readerOptions(KAFKA_READER_OPTIONS, 'kafka', options, properties);

test('keys off the table are refused by name, whatever their spelling or nesting', () => {
  const cases: [Options, string][] = [
    [{ topic: 'salaries' }, 'topic'],
    [{ TOPIC: 'salaries' }, 'TOPIC'],
    [{ Partitions: [0] }, 'Partitions'],
    [{ ' partitions': [0] }, ' partitions'],
    [{ bootstrap_servers: 'evil:9092' }, 'bootstrap_servers'],
    [{ consumer: { topic: 'salaries' } }, 'consumer'],
    [{ constructor: 'x' }, 'constructor'],
    [{ toString: 'x' }, 'toString'],
    [JSON.parse('{"__proto__":{"topic":"salaries"}}'), '__proto__'],
    [{ partitions: [0], commit_group: 'payments' }, 'commit_group'],
  ];
  for (const [options, key] of cases) {
    assert.deepEqual(
      refusal(() => kafka(options)),
      { reason: 'option_not_allowed', key, in: 'options' },
      key,
    );
  }
  assert.equal(refusal(() => readerOptions({}, 'file', { ['k'.repeat(500)]: 1 }, {})).key, `${'k'.repeat(128)}…`);
});

test('each rule narrows against the dataset, never widens it', () => {
  assert.deepEqual({ ...kafka({ partitions: [1, 0] }) }, { partitions: [1, 0] }, 'no dataset list: any partitions');
  assert.deepEqual({ ...kafka({ partitions: [1] }, { partitions: [0, 1] }) }, { partitions: [1] });
  assert.equal(refusal(() => kafka({ partitions: [0, 2] }, { partitions: [0, 1] })).key, 'partitions');
  assert.deepEqual({ ...kafka({ max_messages: 50 }, { max_messages: 5 }) }, { max_messages: 5 });
  assert.deepEqual({ ...kafka({ max_messages: 3 }, { max_messages: 5 }) }, { max_messages: 3 });
  assert.deepEqual({ ...kafka({ offsets: { 0: 1 } }) }, { offsets: { 0: 1 } });
  for (const pin of [{ start_timestamp: 0 }, { from_beginning: false }, { offsets: { 0: 9 } }]) {
    for (const start of [{ from_beginning: true }, { offsets: { 0: 0 } }, { start_timestamp: 0 }]) {
      assert.equal(
        refusal(() => kafka(start, pin)).reason,
        'option_not_allowed',
        `${JSON.stringify(start)} over ${JSON.stringify(pin)}`,
      );
    }
  }
  assert.deepEqual(
    { ...kafka({ value_format: 'text' }, { value_format: 'json' }) },
    { value_format: 'text' },
    'decoding is the reader’s choice',
  );
  assert.equal(Object.getPrototypeOf(kafka({ partitions: [0] })), null);
});

test('an at_most cap takes only a safe whole number: a huge or odd one is refused, never read as no cap', () => {
  for (const max of [1e300, 2 ** 53, 2 ** 53 + 2, Number.MAX_VALUE, -1, 0, 1.5, '5', true, [5], { n: 5 }]) {
    for (const properties of [{}, { max_messages: 10 }]) {
      assert.throws(
        () => kafka({ max_messages: max }, properties),
        (e: unknown) =>
          e instanceof ApiError && e.reason === 'source_options_invalid' && e.extra.option === 'max_messages',
        String(max),
      );
    }
  }
  assert.deepEqual({ ...kafka({ max_messages: 2 ** 53 - 1 }, { max_messages: 10 }) }, { max_messages: 10 });
  assert.deepEqual(
    { ...kafka({ max_messages: null }, { max_messages: 10 }) },
    { max_messages: null },
    'the dataset’s cap stays',
  );
  const input = {
    urn: 'u',
    platform: 'kafka',
    name: 't',
    options: {},
    credentialOverride: null,
    formatHint: null,
    tag: 'x',
  };
  for (const max of [1e300, 2 ** 53, 0]) {
    const properties = { bootstrap_servers: 'k:9092', topic: 't', max_messages: max };
    assert.equal(
      refusal(() => kafkaOptions({ ...input, properties } as unknown as SourceInput)).reason,
      'source_options_invalid',
      String(max),
    );
  }
});

test('a credential_override holds credentials only', () => {
  const fields = ['user', 'password'];
  assert.deepEqual(credentialFields('{"user":"u","password":"p"}', fields, 'postgres'), { user: 'u', password: 'p' });
  assert.equal(credentialFields('bare-password', fields, 'postgres'), null);
  assert.equal(credentialFields('["user"]', fields, 'postgres'), null);
  for (const stray of ['host', 'port', 'table', 'User']) {
    const raw = JSON.stringify({ user: 'u', password: 'p', [stray]: 'x' });
    assert.deepEqual(
      refusal(() => credentialFields(raw, fields, 'postgres')),
      { reason: 'option_not_allowed', key: stray, in: 'credential_override' },
    );
  }
});
