/**
 * The gRPC stream token: bound to job, caller and protocol; platform.retrieval.v1 reusable until it expires, Arrow
 * Flight single-use.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { heldLedger } from '../../../../domains/retrieval/shared.ts';
import { StreamTokens } from '../../../../domains/retrieval/tokens.ts';
import { ApiError } from '../../../../gateway/errors/api-error.ts';

const V1 = 'platform.retrieval.v1';

function problem(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ApiError && error.reason === 'grpc_token_invalid');
    return error.extra.problem;
  }
  return 'accepted';
}

async function claimProblem(claim: () => Promise<unknown>): Promise<unknown> {
  return claim().then(
    () => 'accepted',
    (error: unknown) => {
      assert.ok(error instanceof ApiError && error.reason === 'grpc_token_invalid');
      return error.extra.problem;
    },
  );
}

test('a token verifies for its job until it expires, never for another job or when altered', () => {
  let now = new Date('2026-01-01T00:00:00Z');
  const tokens = new StreamTokens(
    300,
    () => now,
    heldLedger(() => now),
  );
  const { token, expiresAt } = tokens.issue('job-1', 'user-1', V1);
  assert.equal(expiresAt.toISOString(), '2026-01-01T00:05:00.000Z');
  assert.equal(tokens.verify(token, 'job-1', V1), 'user-1');
  assert.equal(tokens.verify(token, 'job-1', V1), 'user-1', 're-use within its life (resume)');
  assert.equal(
    problem(() => tokens.verify(token, 'job-2', V1)),
    'other_job',
  );
  assert.equal(
    problem(() => tokens.verify(`${token}x`, 'job-1', V1)),
    'signature',
  );
  assert.equal(
    problem(() => tokens.verify('nonsense', 'job-1', V1)),
    'malformed',
  );
  assert.equal(
    problem(() =>
      new StreamTokens(
        300,
        () => now,
        heldLedger(() => now),
      ).verify(token, 'job-1', V1),
    ),
    'signature',
    'another gateway start',
  );
  now = new Date('2026-01-01T00:05:00Z');
  assert.equal(
    problem(() => tokens.verify(token, 'job-1', V1)),
    'expired',
  );
});

test('an Arrow Flight token is claimed once, and never passes as the other protocol', async () => {
  let now = new Date('2026-01-01T00:00:00Z');
  const tokens = new StreamTokens(
    300,
    () => now,
    heldLedger(() => now),
  );
  const flight = tokens.issue('job-1', 'user-1', 'arrow-flight').token;
  assert.equal(
    problem(() => tokens.verify(flight, 'job-1', V1)),
    'other_protocol',
  );
  assert.equal(
    await claimProblem(() => tokens.claim(tokens.issue('job-1', 'user-1', V1).token, 'job-1', 'arrow-flight')),
    'other_protocol',
  );
  assert.equal(await tokens.claim(flight, 'job-1', 'arrow-flight'), 'user-1');
  assert.equal(await claimProblem(() => tokens.claim(flight, 'job-1', 'arrow-flight')), 'already_used');
  const second = tokens.issue('job-1', 'user-1', 'arrow-flight').token;
  assert.equal(await tokens.claim(second, 'job-1', 'arrow-flight'), 'user-1', 'a fresh handshake is a fresh token');
  const late = tokens.issue('job-1', 'user-1', 'arrow-flight').token;
  now = new Date('2026-01-01T00:05:00Z');
  assert.equal(await claimProblem(() => tokens.claim(late, 'job-1', 'arrow-flight')), 'expired');
});
