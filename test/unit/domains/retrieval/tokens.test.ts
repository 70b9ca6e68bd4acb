/**
 * The gRPC stream token: bound to job, caller and protocol; platform.retrieval.v1 reusable until it expires, Arrow
 * Flight single-use, spent in a real SQLite database (the gateway's), where a spend outlives the connection.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { spendInDatabase } from '../../../../domains/retrieval/cluster.ts';
import { StreamTokens, type TokenLedger } from '../../../../domains/retrieval/tokens.ts';
import { openDatabase } from '../../../../gateway/db/open.ts';
import { ApiError } from '../../../../gateway/errors/api-error.ts';

type After = { after(fn: () => unknown): void };

/** A key and the spends of a migrated database at `file` (in memory unless named), closed after the test. */
function ledger(t: After, now: () => Date, tokenKey = randomBytes(32), file = ':memory:'): TokenLedger {
  const { sqlite } = openDatabase(file);
  t.after(() => sqlite.close());
  return { tokenKey, spend: spendInDatabase(sqlite, now) };
}

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

test('a token verifies for its job until it expires, never for another job or when altered', (t) => {
  let now = new Date('2026-01-01T00:00:00Z');
  const tokens = new StreamTokens(
    300,
    () => now,
    ledger(t, () => now),
    () => true,
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
        ledger(t, () => now),
        () => true,
      ).verify(token, 'job-1', V1),
    ),
    'signature',
    'another key (another cluster)',
  );
  now = new Date('2026-01-01T00:05:00Z');
  assert.equal(
    problem(() => tokens.verify(token, 'job-1', V1)),
    'expired',
  );
});

test('an Arrow Flight token is claimed once, and never passes as the other protocol', (t) => {
  let now = new Date('2026-01-01T00:00:00Z');
  const tokens = new StreamTokens(
    300,
    () => now,
    ledger(t, () => now),
    () => true,
  );
  const flight = tokens.issue('job-1', 'user-1', 'arrow-flight').token;
  assert.equal(
    problem(() => tokens.verify(flight, 'job-1', V1)),
    'other_protocol',
  );
  assert.equal(
    problem(() => tokens.claim(tokens.issue('job-1', 'user-1', V1).token, 'job-1', 'arrow-flight')),
    'other_protocol',
  );
  assert.equal(tokens.claim(flight, 'job-1', 'arrow-flight').userId, 'user-1');
  assert.equal(
    problem(() => tokens.claim(flight, 'job-1', 'arrow-flight')),
    'already_used',
  );
  const second = tokens.issue('job-1', 'user-1', 'arrow-flight').token;
  assert.equal(tokens.claim(second, 'job-1', 'arrow-flight').userId, 'user-1', 'a fresh handshake is a fresh token');
  const late = tokens.issue('job-1', 'user-1', 'arrow-flight').token;
  now = new Date('2026-01-01T00:05:00Z');
  assert.equal(
    problem(() => tokens.claim(late, 'job-1', 'arrow-flight')),
    'expired',
  );
});

test('a spent Flight token stays spent for the next connection (a restart); a fresh one is taken once', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-tokens-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'meshgate.db');
  const now = () => new Date('2026-01-01T00:00:00Z');
  const key = randomBytes(32);
  const before = new StreamTokens(300, now, ledger(t, now, key, file), () => true);
  const spent = before.issue('job-1', 'user-1', 'arrow-flight').token;
  const unspent = before.issue('job-1', 'user-1', 'arrow-flight').token;
  assert.equal(before.claim(spent, 'job-1', 'arrow-flight').userId, 'user-1');
  const after = new StreamTokens(300, now, ledger(t, now, key, file), () => true);
  assert.equal(
    problem(() => after.claim(spent, 'job-1', 'arrow-flight')),
    'already_used',
  );
  assert.equal(after.claim(unspent, 'job-1', 'arrow-flight').userId, 'user-1');
  assert.equal(
    problem(() => before.claim(unspent, 'job-1', 'arrow-flight')),
    'already_used',
    'spent once across connections',
  );
});

test("a disabled or deleted user's token is refused, and a Flight token is not spent by the refusal", (t) => {
  const now = () => new Date('2026-01-01T00:00:00Z');
  const active = new Set(['user-1']);
  const tokens = new StreamTokens(300, now, ledger(t, now), (userId) => active.has(userId));
  const v1 = tokens.issue('job-1', 'user-1', V1).token;
  const flight = tokens.issue('job-1', 'user-1', 'arrow-flight').token;
  active.delete('user-1');
  assert.equal(
    problem(() => tokens.verify(v1, 'job-1', V1)),
    'user_disabled',
  );
  assert.equal(
    problem(() => tokens.claim(flight, 'job-1', 'arrow-flight')),
    'user_disabled',
  );
  assert.equal(
    problem(() => tokens.verify(tokens.issue('job-1', 'user-2', V1).token, 'job-1', V1)),
    'user_disabled',
    'a user never known (deleted) reads nothing',
  );
  active.add('user-1');
  assert.equal(tokens.verify(v1, 'job-1', V1), 'user-1', 'enabled again, the unexpired token works');
  assert.equal(tokens.claim(flight, 'job-1', 'arrow-flight').userId, 'user-1');
});

test("a Flight endpoint's token grants its slice of the read; a whole-read token grants all of it", (t) => {
  const now = () => new Date('2026-01-01T00:00:00Z');
  const tokens = new StreamTokens(300, now, ledger(t, now), () => true);
  const whole = tokens.issue('job-1', 'user-1', 'arrow-flight').token;
  const middle = tokens.issue('job-1', 'user-1', 'arrow-flight', { from: 10, to: 20 }).token;
  const last = tokens.issue('job-1', 'user-1', 'arrow-flight', { from: 20, to: null }).token;
  assert.deepEqual(tokens.claim(whole, 'job-1', 'arrow-flight'), { userId: 'user-1', range: null });
  assert.deepEqual(tokens.claim(middle, 'job-1', 'arrow-flight'), { userId: 'user-1', range: { from: 10, to: 20 } });
  assert.deepEqual(tokens.claim(last, 'job-1', 'arrow-flight'), { userId: 'user-1', range: { from: 20, to: null } });
});
