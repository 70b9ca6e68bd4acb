/**
 * The login budget is one budget across processes: `meshgate serve --workers 2`, a client guessing on a fresh
 * connection each time (so both workers take its guesses) gets ten failed logins in all, not ten per worker.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connection, servedBy, workersScratch } from '../../../helpers/workers.ts';

test('two workers share one login budget per client: the eleventh guess is refused by either', async (t) => {
  const { serve } = workersScratch(t, 'meshgate-throttle-workers-');
  const served = await serve(2);
  const answers: { status: number; requestId: string }[] = [];
  // Bounded: 24 guesses, each on its own connection (the workers take connections, not requests).
  for (let i = 0; i < 24; i++) {
    const conn = connection(served);
    try {
      const requestId = crypto.randomUUID();
      const res = await conn.client.request({
        method: 'POST',
        path: '/api/auth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-request-id': requestId },
        body: new URLSearchParams({ username: 'nobody', password: `guess-${i}`, grant_type: 'password' }).toString(),
      });
      await res.body.dump();
      answers.push({ status: res.statusCode, requestId });
    } finally {
      await conn.close();
    }
  }
  const statuses = answers.map((a) => a.status);
  assert.deepEqual(statuses, [...Array(10).fill(401), ...Array(14).fill(429)], statuses.join(' '));
  // With both workers answering, ten failures in all prove one budget: counters of their own would have let each
  // check ten (a worker that refused without having checked ten itself read the other's failures).
  const workers = new Set(await Promise.all(answers.map((a) => servedBy(served, a.requestId))));
  assert.equal(workers.size, 2, 'both workers took guesses');
});
