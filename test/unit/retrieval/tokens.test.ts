/** The gRPC stream token: bound to job and caller, reusable until it expires. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamTokens } from '../../../domains/retrieval/tokens.ts';
import { ApiError } from '../../../gateway/errors/api-error.ts';

test('a token verifies for its job until it expires, never for another job or when altered', () => {
  let now = new Date('2026-01-01T00:00:00Z');
  const tokens = new StreamTokens(300, () => now);
  const { token, expiresAt } = tokens.issue('job-1', 'user-1');
  assert.equal(expiresAt.toISOString(), '2026-01-01T00:05:00.000Z');
  assert.equal(tokens.verify(token, 'job-1'), 'user-1');
  assert.equal(tokens.verify(token, 'job-1'), 'user-1', 're-use within its life (resume)');
  const problem = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      assert.ok(error instanceof ApiError && error.reason === 'grpc_token_invalid');
      return error.extra.problem;
    }
    return 'accepted';
  };
  assert.equal(
    problem(() => tokens.verify(token, 'job-2')),
    'other_job',
  );
  assert.equal(
    problem(() => tokens.verify(`${token}x`, 'job-1')),
    'signature',
  );
  assert.equal(
    problem(() => tokens.verify('nonsense', 'job-1')),
    'malformed',
  );
  assert.equal(
    problem(() => new StreamTokens(300, () => now).verify(token, 'job-1')),
    'signature',
    'another gateway process',
  );
  now = new Date('2026-01-01T00:05:00Z');
  assert.equal(
    problem(() => tokens.verify(token, 'job-1')),
    'expired',
  );
});
