/**
 * The growing factor for bursts: raised while major collections come back to back, put back to its launch value
 * after a while, and never raised by collections seconds apart.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { watchMarking } from '../../../../app/process/marking-watch.ts';
import { waitFor } from '../../../helpers/wait.ts';

/** gc() through a context of this test's own (its process is started without --expose-gc). */
function majorCollection(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as NodeJS.GCFunction;
  setFlagsFromString('--no-expose-gc');
  gc({ type: 'major', execution: 'sync' });
}

const turn = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

test('major collections back to back raise the factor for a while, then it goes back', async (t) => {
  const set: string[] = [];
  const watch = watchMarking((flag) => set.push(flag), 300);
  t.after(() => watch.close());
  // A machine that stalls between two of them starts the count again: as many as it takes, within reason.
  for (let i = 0; i < 20 && !watch.raised; i++) {
    majorCollection();
    await turn();
  }
  assert.equal(watch.raised, true);
  assert.deepEqual(set, ['--heap-growing-percent=300']);
  await waitFor(() => !watch.raised, { what: 'the launch factor back', timeoutMs: 10_000 });
  assert.deepEqual(set, ['--heap-growing-percent=300', '--heap-growing-percent=0']);
});

test('major collections seconds apart, as a steady load or an idle process runs them, leave the factor', async (t) => {
  const set: string[] = [];
  const watch = watchMarking((flag) => set.push(flag), 300);
  t.after(() => watch.close());
  for (let i = 0; i < 4; i++) {
    majorCollection();
    await turn(400);
  }
  assert.equal(watch.raised, false);
  assert.deepEqual(set, []);
});

test('closing the watch while raised puts the launch value back', async (t) => {
  const set: string[] = [];
  const watch = watchMarking((flag) => set.push(flag), 60_000);
  t.after(() => watch.close());
  for (let i = 0; i < 20 && !watch.raised; i++) {
    majorCollection();
    await turn();
  }
  assert.equal(watch.raised, true);
  watch.close();
  assert.equal(watch.raised, false);
  assert.deepEqual(set, ['--heap-growing-percent=300', '--heap-growing-percent=0']);
});
