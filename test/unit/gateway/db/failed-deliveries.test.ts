/** What the change feed keeps of deliveries and reloads that threw, and how it hands them over again. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { FailedDeliveries } from '../../../../gateway/db/failed-deliveries.ts';

const silent = pino({ level: 'silent' });

/** A subscriber that throws while `down` is true and records what it was handed otherwise. */
function flaky() {
  const seen: string[] = [];
  const state = { down: true };
  const onChange = (key: string) => {
    if (state.down) throw new Error('database busy');
    seen.push(key);
  };
  return { seen, state, onChange };
}

test('a delivery that threw goes through at a later retry, in the order the keys failed', () => {
  const failed = new FailedDeliveries(silent, () => []);
  const sub = flaky();
  for (const key of ['a', 'b', 'a']) failed.deliver('tuples', sub.onChange, key);
  failed.retry();
  assert.deepEqual(sub.seen, [], 'still down: kept');
  assert.equal(failed.pending, 2, "a key failing again is kept once, at its latest place ('b', then 'a')");
  sub.state.down = false;
  failed.retry();
  assert.deepEqual(sub.seen, ['b', 'a']);
  assert.equal(failed.pending, 0);
});

test('a reload that threw is run again until it goes through', () => {
  const failed = new FailedDeliveries(silent, () => []);
  let reloads = 0;
  let down = true;
  failed.reload('revoked_sessions', () => {
    if (down) throw new Error('connection lost');
    reloads++;
  });
  failed.retry();
  assert.equal(reloads, 0);
  down = false;
  failed.retry();
  failed.retry();
  assert.equal(reloads, 1, 'once it went through it is no longer kept');
});

test('past 1000 kept keys a topic that can reload does so instead; an event topic drops its oldest', () => {
  let reloads = 0;
  const failed = new FailedDeliveries(silent, (topic) => (topic === 'tuples' ? [() => reloads++] : []));
  const tuples = flaky();
  const stops = flaky();
  for (let i = 0; i <= 1000; i++) {
    failed.deliver('tuples', tuples.onChange, `t${i}`);
    failed.deliver('job_stop', stops.onChange, `j${i}`);
  }
  assert.equal(failed.pending, 1 + 1000, "the tuples' keys became one reload; the stops keep the newest 1000");
  tuples.state.down = false;
  stops.state.down = false;
  failed.retry();
  assert.equal(reloads, 1);
  assert.deepEqual(tuples.seen, [], 'the reload stands for every key');
  assert.equal(stops.seen.length, 1000);
  assert.equal(stops.seen[0], 'j1', 'the oldest was dropped');
});
