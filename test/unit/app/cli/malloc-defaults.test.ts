/** The executable's malloc settings: added where the environment lacks them, never over a value it sets. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withMallocDefaults } from '../../../../app/cli/malloc-defaults.ts';

test('the defaults are added to an environment without them, the rest of it kept', () => {
  assert.deepEqual(withMallocDefaults({ HOME: '/h' }), {
    HOME: '/h',
    MALLOC_ARENA_MAX: '1',
    MALLOC_TRIM_THRESHOLD_: '131072',
  });
});

test('a value the environment sets is kept, the one it lacks added; nothing to add is null (no second start)', () => {
  assert.deepEqual(withMallocDefaults({ MALLOC_ARENA_MAX: '4' }), {
    MALLOC_ARENA_MAX: '4',
    MALLOC_TRIM_THRESHOLD_: '131072',
  });
  assert.equal(withMallocDefaults({ MALLOC_ARENA_MAX: '4', MALLOC_TRIM_THRESHOLD_: '0' }), null);
});
