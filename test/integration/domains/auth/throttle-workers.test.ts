/**
 * The login budget is one budget across processes: `meshgate serve --workers 2`, a client guessing on a fresh
 * connection each time (so both workers take its guesses) gets ten failed logins in all, not ten per worker; and
 * guesses sent all at once, hashed several at a time in each worker, are checked no more often than the budget holds.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { connection, type Served, servedBy, workersScratch } from '../../../helpers/workers.ts';

/** One wrong guess on a connection of its own (the workers take connections, not requests). */
async function guess(served: Served, password: string): Promise<{ status: number; requestId: string }> {
  const conn = connection(served);
  try {
    const requestId = crypto.randomUUID();
    const res = await conn.client.request({
      method: 'POST',
      path: '/api/auth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-request-id': requestId },
      body: new URLSearchParams({ username: 'nobody', password, grant_type: 'password' }).toString(),
    });
    await res.body.dump();
    return { status: res.statusCode, requestId };
  } finally {
    await conn.close();
  }
}

test('two workers share one login budget per client: the eleventh guess is refused by either', async (t) => {
  const { serve } = workersScratch(t, 'meshgate-throttle-workers-');
  const served = await serve(2);
  const answers: { status: number; requestId: string }[] = [];
  // Bounded: 24 guesses, one after another.
  for (let i = 0; i < 24; i++) answers.push(await guess(served, `guess-${i}`));
  const statuses = answers.map((a) => a.status);
  assert.deepEqual(statuses, [...Array(10).fill(401), ...Array(14).fill(429)], statuses.join(' '));
  // With both workers answering, ten failures in all prove one budget: counters of their own would have let each
  // check ten (a worker that refused without having checked ten itself read the other's failures).
  const workers = new Set(await Promise.all(answers.map((a) => servedBy(served, a.requestId))));
  assert.equal(workers.size, 2, 'both workers took guesses');
});

test('two workers, 30 guesses at once, 8 hashed at a time in each: five checked with a budget of five', async (t) => {
  const { dir, serve } = workersScratch(t, 'meshgate-throttle-burst-');
  const config = join(dir, 'throttle.json');
  writeFileSync(config, JSON.stringify({ auth: { throttle: { clientBurst: 5, hashConcurrency: 8 } } }));
  const served = await serve(2, { PLATFORM_CONFIG_FILE: config });
  const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => guess(served, `burst-${i}`)));
  const statuses = answers.map((a) => a.status);
  assert.equal(statuses.filter((s) => s === 401).length, 5, statuses.join(' '));
  assert.equal(statuses.filter((s) => s === 429).length, 25, statuses.join(' '));
  const workers = new Set(await Promise.all(answers.map((a) => servedBy(served, a.requestId))));
  assert.equal(workers.size, 2, 'both workers took guesses');
});
