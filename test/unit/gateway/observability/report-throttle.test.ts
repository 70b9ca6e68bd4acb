import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReportThrottle } from '../../../../gateway/observability/report-throttle.ts';

test('the first failure is reported at once, then one report an interval with the count held back', () => {
  let now = 1_000_000;
  const throttle = new ReportThrottle(60_000, () => now);
  assert.equal(throttle.take(), 0, 'the first is reported, nothing held back');
  const within = [1, 30_000, 59_999].map((later) => {
    now = 1_000_000 + later;
    return throttle.take();
  });
  assert.deepEqual(within, [undefined, undefined, undefined], 'held back within the interval');
  now = 1_060_000;
  assert.equal(throttle.take(), 3, 'the next report counts the three held back');
  now = 1_060_001;
  assert.equal(throttle.take(), undefined, 'the interval starts again at that report');
  now = 2_000_000;
  assert.equal(throttle.take(), 1, 'a report long after says what was held back since the last one');
  now = 3_000_000;
  assert.equal(throttle.take(), 0, 'and nothing when nothing was');
});

test('a burst of failures within one interval gives one report', () => {
  const now = 5;
  const throttle = new ReportThrottle(60_000, () => now);
  const reports = Array.from({ length: 1000 }, () => throttle.take()).filter((held) => held !== undefined);
  assert.deepEqual(reports, [0]);
});
