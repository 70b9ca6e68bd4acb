import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_QUERY, queryOf } from '../../../../gateway/http/context.ts';

/** The query of a request target (RFC 9112 §3.2, origin-form): what follows its first `?`. */
const queryOfTarget = (target: string) => queryOf(target, target.indexOf('?'));

test('a target’s query is what follows its first ?, parsed', () => {
  const query = queryOfTarget('/a%2Fb/c?x=1&y=a+b&x=2?z');
  assert.deepEqual(query.getAll('x'), ['1', '2?z']);
  assert.equal(query.get('y'), 'a b');
});

test('a target without a query (or with an empty one) shares one read-only empty query', () => {
  for (const target of ['/path', '/path?']) {
    const query = queryOfTarget(target);
    assert.equal(query, NO_QUERY);
    assert.equal(query.size, 0);
  }
  // The type has no mutators (a change does not compile); a cast past it still cannot change the shared query.
  const mutable = NO_QUERY as URLSearchParams;
  assert.throws(() => mutable.set('a', '1'), /read-only/);
  assert.throws(() => mutable.append('a', '1'), /read-only/);
  assert.throws(() => mutable.delete('a'), /read-only/);
  assert.throws(() => mutable.sort(), /read-only/);
  assert.equal(String(NO_QUERY), '');
});
