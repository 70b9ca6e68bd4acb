import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  containerUrn,
  datasetUrn,
  parseContainerUrn,
  parseDatasetUrn,
  parseSecretUrn,
  secretReferences,
  secretUrn,
  splitV2Tail,
} from '../../../../domains/catalog/urn.ts';
import { HOSTILE_NAMES, rawSafe } from '../../../helpers/catalog.ts';

test('dataset URNs round-trip every hostile name', () => {
  for (const name of HOSTILE_NAMES) {
    const parts = { platform: 'file', name, environment: 'PROD' };
    const urn = datasetUrn(parts);
    assert.ok(urn.startsWith('urn:li:dataset:(urn:li:dataPlatform:file,'));
    assert.deepEqual(parseDatasetUrn(urn), parts, name);
  }
});

test('container and secret URNs round-trip', () => {
  for (const name of HOSTILE_NAMES) {
    assert.deepEqual(parseContainerUrn(containerUrn('s3', name)), { platform: 's3', name, environment: 'PROD' });
    assert.equal(parseSecretUrn(secretUrn(name)), name);
  }
  assert.equal(parseDatasetUrn('urn:li:dataset:foo'), null);
  assert.equal(
    parseDatasetUrn('urn:li:dataset:(urn:li:dataPlatform:f/x,n,PROD)'),
    null,
    'platform token is restricted',
  );
  assert.equal(parseSecretUrn('urn:li:dataHubSecret:'), null);
});

test('the v2 tail is decoded once, raw or percent-encoded, and splits only on unencoded keywords', () => {
  for (const name of HOSTILE_NAMES) {
    const urn = datasetUrn({ platform: 'file', name, environment: 'PROD' });
    const encoded = encodeURIComponent(urn);
    assert.deepEqual(splitV2Tail(encoded, 'schema', 'last'), { urn, sub: null, rest: null }, name);
    assert.deepEqual(splitV2Tail(`${encoded}/schema`, 'schema', 'last'), { urn, sub: 'schema', rest: null }, name);
    // A raw URN is decoded too; names with `%` must therefore travel encoded.
    const raw = urn.replace(/[^\x21-\x7e]/gu, (c) => encodeURIComponent(c));
    if (rawSafe(raw)) {
      assert.deepEqual(splitV2Tail(raw, 'schema', 'last'), { urn, sub: null, rest: null }, `raw ${name}`);
      assert.deepEqual(
        splitV2Tail(`${raw}/schema`, 'schema', 'last'),
        { urn, sub: 'schema', rest: null },
        `raw ${name}/schema`,
      );
    }
  }
});

test('container tails split at the first balanced /datasets segment', () => {
  const c = containerUrn('s3', '/my/datasets/x');
  const d = datasetUrn({ platform: 'file', name: 'a/datasets/b', environment: 'PROD' });
  const rows: { tail: string; expect: ReturnType<typeof splitV2Tail> }[] = [
    { tail: c, expect: { urn: c, sub: null, rest: null } },
    { tail: `${c}/datasets`, expect: { urn: c, sub: 'datasets', rest: null } },
    { tail: `${c}/datasets/${d}`, expect: { urn: c, sub: 'datasets', rest: d } },
    {
      tail: `${encodeURIComponent(c)}/datasets/${encodeURIComponent(d)}`,
      expect: { urn: c, sub: 'datasets', rest: d },
    },
    { tail: 'urn:li:container:1/datasets', expect: { urn: 'urn:li:container:1', sub: 'datasets', rest: null } },
    {
      tail: `${encodeURIComponent('urn:li:container:x/datasets')}`,
      expect: { urn: 'urn:li:container:x/datasets', sub: null, rest: null },
    },
  ];
  for (const row of rows) assert.deepEqual(splitV2Tail(row.tail, 'datasets', 'balanced'), row.expect, row.tail);
});

test('secret references are found at any depth, strings only', () => {
  const refs = secretReferences({
    password: 'urn:li:dataHubSecret:pg',
    nested: { list: ['x', 'urn:li:dataHubSecret:kafka', 3] },
    other: 'urn:li:dataset:x',
  });
  assert.deepEqual([...refs].sort(), ['urn:li:dataHubSecret:kafka', 'urn:li:dataHubSecret:pg']);
});
