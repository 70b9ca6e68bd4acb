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
  // The type has no mutators (a change does not compile); a cast past it still cannot change the shared query.
  const mutable = NO_QUERY as URLSearchParams;
  assert.throws(() => mutable.set('a', '1'), /read-only/);
  assert.throws(() => mutable.append('a', '1'), /read-only/);
  assert.throws(() => mutable.delete('a'), /read-only/);
  assert.throws(() => mutable.sort(), /read-only/);
  assert.equal(String(NO_QUERY), '');
});
