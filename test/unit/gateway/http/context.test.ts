import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_QUERY, splitTarget } from '../../../../gateway/http/context.ts';

test('a target splits at its first ? into the raw path and the parsed query', () => {
  const { rawPath, query } = splitTarget('/a%2Fb/c?x=1&y=a+b&x=2?z');
  assert.equal(rawPath, '/a%2Fb/c');
  assert.deepEqual(query.getAll('x'), ['1', '2?z']);
  assert.equal(query.get('y'), 'a b');
});

test('a target without a query (or with an empty one) shares one read-only empty query', () => {
  for (const target of ['/path', '/path?', undefined]) {
    const { query } = splitTarget(target);
    assert.equal(query, NO_QUERY);
    assert.equal(query.size, 0);
  }
  assert.equal(splitTarget(undefined).rawPath, '/');
  assert.equal(splitTarget('/path?').rawPath, '/path');
  assert.throws(() => NO_QUERY.set('a', '1'), /read-only/);
  assert.throws(() => NO_QUERY.append('a', '1'), /read-only/);
  assert.throws(() => NO_QUERY.delete('a'), /read-only/);
  assert.throws(() => NO_QUERY.sort(), /read-only/);
  assert.equal(String(NO_QUERY), '');
});
