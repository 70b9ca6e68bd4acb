/**
 * Folded warnings with a real pino logger: the first failure of a kind is a line at once, the rest of its window one
 * line with the last failure's fields and how many were folded in besides it; kinds fold apart; a quiet kind is
 * forgotten, so its next failure is a line at once again.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { FoldedWarnings } from '../../../gateway/folded-warnings.ts';
import { waitFor } from '../../helpers/wait.ts';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, stream) };
}

test('a repeated failure is one line, then one line a window with the count folded in', async () => {
  const { lines, logger } = capture();
  const warnings = new FoldedWarnings(100);
  for (let i = 0; i < 50; i++)
    warnings.warn(logger, 'upstream_unreachable d-1', { req_id: `r-${i}` }, 'request failed');
  warnings.warn(logger, 'upstream_timeout d-2', { req_id: 'other' }, 'request failed');
  assert.deepEqual(
    lines.map((l) => [l.req_id, l.suppressed]),
    [
      ['r-0', undefined],
      ['other', undefined],
    ],
    'the first of each kind at once, the rest held',
  );
  await waitFor(() => lines.length === 3, { what: 'the folded line' });
  assert.equal(lines[2]?.req_id, 'r-49', 'the last failure stands for the window');
  assert.equal(lines[2]?.suppressed, 48, 'the 49 failures after the first: one shown, 48 folded in');
  assert.equal(lines[2]?.level, 40);
  assert.equal(lines[2]?.msg, 'request failed');

  // A window after a folded line folds too; one that stayed quiet is forgotten.
  warnings.warn(logger, 'upstream_unreachable d-1', { req_id: 'late' }, 'request failed');
  assert.equal(lines.length, 3, 'inside the window that line opened: held');
  await waitFor(() => lines.length === 4, { what: 'the second window' });
  assert.deepEqual([lines[3]?.req_id, lines[3]?.suppressed], ['late', 0]);
  await new Promise((resolve) => setTimeout(resolve, 250));
  warnings.warn(logger, 'upstream_unreachable d-1', { req_id: 'again' }, 'request failed');
  assert.deepEqual([lines[4]?.req_id, lines[4]?.suppressed], ['again', undefined], 'a quiet kind starts over');
});
