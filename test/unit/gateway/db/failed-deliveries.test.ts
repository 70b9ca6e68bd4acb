/** What the change feed keeps of deliveries and reloads that threw, and how it hands them over again. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { FailedDeliveries } from '../../../../gateway/db/failed-deliveries.ts';

const silent = pino({ level: 'silent' });

/** A subscriber that throws while `down` is true (or for the keys in `broken`) and records what it was handed. */
function flaky(broken: readonly string[] = []) {
  const seen: string[] = [];
  const state = { down: true };
  const onChange = (key: string) => {
    if (state.down || broken.includes(key)) throw new Error('database busy');
    seen.push(key);
  };
  return { seen, state, onChange };
}

/** FailedDeliveries on a clock the test moves. */
function onClock(reloadsOf: (topic: string) => readonly (() => void)[] = () => []) {
  const clock = { now: 0 };
  return { failed: new FailedDeliveries(silent, reloadsOf, () => clock.now), clock };
}

test('a delivery that threw goes through at a later retry, in the order the keys failed', () => {
  const { failed, clock } = onClock();
  const sub = flaky();
  for (const key of ['a', 'b', 'a']) failed.deliver('tuples', sub.onChange, key);
  failed.retry();
  assert.deepEqual(sub.seen, [], 'still down: kept');
  assert.equal(failed.pending, 2, 'a key failing again is kept once, at its latest place');
  sub.state.down = false;
  clock.now += 60_000;
  failed.retry();
  assert.deepEqual(sub.seen, ['b', 'a']);
  assert.equal(failed.pending, 0);
});

test('failing rounds back off, doubling from 100 ms to 10 s, and stop at their first failure', () => {
  const { failed, clock } = onClock();
  let attempts = 0;
  const down = () => {
    attempts++;
    throw new Error('connection refused');
  };
  for (const key of ['a', 'b', 'c']) failed.deliver('tuples', down, key);
  attempts = 0;
  failed.retry();
  assert.equal(attempts, 0, 'not at once: the feed is polled on every request');
  const waits: number[] = [];
  for (let round = 0; round < 10; round++) {
    let waited = 0;
    while (attempts === round) {
      clock.now += 50;
      waited += 50;
      failed.retry();
    }
    assert.equal(attempts, round + 1, 'each round ends at its first failure');
    waits.push(waited);
  }
  assert.deepEqual(waits.slice(0, 5), [100, 200, 400, 800, 1600]);
  assert.equal(waits.at(-1), 10_000, 'at most 10 s apart');
});

test('one key that always fails holds back no other', () => {
  const { failed, clock } = onClock();
  const sub = flaky(['poison']);
  for (const key of ['poison', 'a', 'b']) failed.deliver('tuples', sub.onChange, key);
  sub.state.down = false;
  for (let round = 0; round < 3; round++) {
    clock.now += 60_000;
    failed.retry();
  }
  assert.deepEqual(sub.seen, ['a', 'b']);
  assert.equal(failed.pending, 1);
});

test('a subscriber or a reload that always fails holds back no other', () => {
  const { failed, clock } = onClock();
  const broken = flaky();
  const working = flaky();
  failed.reload('routing_config', () => {
    throw new Error('always');
  });
  failed.deliver('tuples', broken.onChange, 'x');
  failed.deliver('users', working.onChange, 'u1');
  working.state.down = false;
  for (let round = 0; round < 6; round++) {
    clock.now += 60_000;
    failed.retry();
  }
  assert.deepEqual(working.seen, ['u1']);
  assert.equal(failed.pending, 2, 'the broken reload and key, still kept');
});

test('a reload that threw is run again until it goes through', () => {
  const { failed, clock } = onClock();
  let reloads = 0;
  let down = true;
  failed.reload('revoked_sessions', () => {
    if (down) throw new Error('connection lost');
    reloads++;
  });
  failed.retry();
  assert.equal(reloads, 0);
  down = false;
  clock.now += 60_000;
  failed.retry();
  failed.retry();
  assert.equal(reloads, 1, 'once it went through it is no longer kept');
});

test('past 1000 kept keys a topic that can reload does so instead; an event topic drops its oldest', () => {
  let reloads = 0;
  const { failed, clock } = onClock((topic) => (topic === 'tuples' ? [() => reloads++] : []));
  const tuples = flaky();
  const stops = flaky();
  for (let i = 0; i <= 1000; i++) {
    failed.deliver('tuples', tuples.onChange, `t${i}`);
    failed.deliver('job_stop', stops.onChange, `j${i}`);
  }
  assert.equal(failed.pending, 1 + 1000, "the tuples' keys became one reload; the stops keep the newest 1000");
  tuples.state.down = false;
  stops.state.down = false;
  clock.now += 60_000;
  failed.retry();
  assert.equal(reloads, 1);
  assert.deepEqual(tuples.seen, [], 'the reload stands for every key');
  assert.equal(stops.seen.length, 1000);
  assert.equal(stops.seen[0], 'j1', 'the oldest was dropped');
});

test('one subscriber of two topics keeps each topic’s keys apart', () => {
  let reloads = 0;
  const { failed, clock } = onClock((topic) => (topic === 'federations' ? [() => reloads++] : []));
  const bump = flaky();
  failed.deliver('federation_users', bump.onChange, 'u1');
  for (let i = 0; i <= 1000; i++) failed.deliver('federations', bump.onChange, `f${i}`);
  bump.state.down = false;
  clock.now += 60_000;
  failed.retry();
  assert.equal(reloads, 1, "the overflowing topic's reload");
  assert.deepEqual(bump.seen, ['u1'], "the other topic's key, delivered");
});
