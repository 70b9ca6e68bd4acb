/** A dead worker's slot is refilled after a backoff that doubles per consecutive failure and is capped. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { restartDelay, workerMallocEnv } from '../../../../app/process/supervisor.ts';

test('restart backoff: 100 ms, doubling per consecutive failure, at most 10 s', () => {
  assert.deepEqual([0, 1, 2, 3, 6, 7, 8, 20].map(restartDelay), [100, 200, 400, 800, 6400, 10_000, 10_000, 10_000]);
});

test("each worker gets the launcher's malloc settings unless the environment sets them", () => {
  assert.deepEqual(workerMallocEnv({}), {
    MALLOC_ARENA_MAX: '1',
    MALLOC_TRIM_THRESHOLD_: '131072',
    MALLOC_MMAP_THRESHOLD_: '4194304',
  });
  assert.deepEqual(
    workerMallocEnv({ MALLOC_ARENA_MAX: '4', MALLOC_TRIM_THRESHOLD_: '0', MALLOC_MMAP_THRESHOLD_: '0' }),
    {
      MALLOC_ARENA_MAX: '4',
      MALLOC_TRIM_THRESHOLD_: '0',
      MALLOC_MMAP_THRESHOLD_: '0',
    },
  );
});
