/**
 * What a failed attempt may be sent again (retry.ts), and the retry budget: ten retries a second of its own, plus
 * a fifth of the requests.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mayRetry, RetryBudget } from '../../../../domains/serving/retry.ts';

test('nothing that may have arrived is sent twice unless idempotent and replayable', () => {
  const table: [Parameters<typeof mayRetry>, boolean][] = [
    [['connect', 'POST', false, true], true],
    [['connect', 'POST', false, false], false],
    [['reset', 'POST', true, true], false],
    [['dropped', 'PATCH', true, true], false],
    [['status', 'POST', true, true], false],
    [['reset', 'GET', true, true], true],
    [['status', 'PUT', true, false], true],
    [['status', 'PUT', false, false], false],
    [['exchange', 'GET', true, true], false],
    [['closed', 'GET', true, true], false],
  ];
  for (const [args, expected] of table) assert.equal(mayRetry(...args), expected, args.join(' '));
});

test('the budget allows a hundred retries per ten seconds, plus a fifth of the requests', () => {
  const budget = new RetryBudget();
  let allowed = 0;
  while (budget.take()) allowed++;
  assert.equal(allowed, 100);
  for (let i = 0; i < 1000; i++) budget.request();
  while (budget.take()) allowed++;
  assert.equal(allowed, 300);
});
