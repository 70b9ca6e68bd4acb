import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lazyModule } from '../../../../../domains/retrieval/sources/lazy.ts';
import { ApiError } from '../../../../../gateway/errors/api-error.ts';

test('lazyModule loads once, on the first call, and shares the module', async () => {
  let loads = 0;
  const path = lazyModule('path', () => {
    loads += 1;
    return import('node:path');
  });
  assert.equal(loads, 0);
  const [a, b] = await Promise.all([path(), path()]);
  assert.equal(a, b);
  assert.equal(typeof a.join, 'function');
  assert.equal(loads, 1);
});

test('a library that cannot be loaded is a 502 source_unavailable, and the next use tries again', async () => {
  let loads = 0;
  const missing = 'meshgate-no-such-client-library';
  const library = lazyModule('Example', () => {
    loads += 1;
    return import(missing);
  });
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    await assert.rejects(library(), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 502);
      assert.equal(error.reason, 'source_unavailable');
      assert.equal(error.extra.problem, 'the Example client library could not be loaded');
      assert.match(String((error.cause as Error).message), /meshgate-no-such-client-library/);
      return true;
    });
    assert.equal(loads, attempt);
  }
});
