/**
 * Where the login throttle keeps its counters: the `login_throttle` table of
 * the database every worker and node shares, so a budget is one budget
 * whichever process a login lands on (N processes with their own counters
 * would allow N times as many guesses).
 *
 * Cheap on the hot path: an admission reads every key it needs in one
 * statement; a failure is one upsert per bucket, whose refill and decrement
 * happen inside the statement (`ON CONFLICT DO UPDATE`, whose SET sees the
 * row as it was: SQLite https://sqlite.org/lang_upsert.html, PostgreSQL
 * INSERT … ON CONFLICT), so concurrent failures from several processes are
 * each counted. Rows are dropped once they can no longer matter.
 */
import type { SqlConnection } from '../../gateway/db/connection.ts';

/** A bucket's row: tokens left at `atMs`. */
export interface BucketRow {
  readonly tokens: number;
  readonly atMs: number;
}

/** A failure bucket's shape: `capacity` tokens, one back every `refillMs`. */
export interface BucketSpec {
  readonly capacity: number;
  readonly refillMs: number;
}

/** The bucket's level at `nowMs`: full when it has no row; never below what it held (clocks may step back). */
export function bucketLevel(row: BucketRow | undefined, spec: BucketSpec, nowMs: number): number {
  return row ? Math.min(spec.capacity, row.tokens + Math.max(0, nowMs - row.atMs) / spec.refillMs) : spec.capacity;
}

/** Whole seconds until a bucket at `level` holds a token again (at least 1). */
export function retryAfterSeconds(level: number, spec: BucketSpec): number {
  return Math.max(1, Math.ceil(((1 - level) * spec.refillMs) / 1000));
}

/** Failures between prunes of the rows that no longer matter. */
const PRUNE_EVERY = 256;

export class ThrottleLedger {
  readonly #fail;
  readonly #touch;
  readonly #pruneBuckets;
  readonly #pruneKnown;
  readonly #reads = new Map<number, ReturnType<SqlConnection['prepare']>>();
  #sincePrune = 0;

  /**
   * `keepMs`: how long a bucket's row matters after its last failure (it has refilled, and its quiet time decides
   * nothing any more); `knownMs`: how long a sign-in is remembered.
   */
  constructor(
    private readonly sql: SqlConnection,
    private readonly keepMs: number,
    private readonly knownMs: number,
  ) {
    // The level before this failure, refilled since the last one (never by a negative elapsed time), capped.
    const elapsed =
      'CASE WHEN excluded.at_ms > login_throttle.at_ms THEN excluded.at_ms - login_throttle.at_ms ELSE 0 END';
    const refilled = `(login_throttle.tokens + (${elapsed}) * 1.0 / ?)`;
    const level = `(CASE WHEN ${refilled} >= ? THEN ? ELSE ${refilled} END)`;
    this.#fail = sql.prepare(
      'INSERT INTO login_throttle (key, tokens, at_ms, level_before) VALUES (?, ?, ?, ?) ' +
        `ON CONFLICT (key) DO UPDATE SET level_before = ${level}, ` +
        `tokens = CASE WHEN ${level} >= 1 THEN ${level} - 1 ELSE 0 END, at_ms = excluded.at_ms ` +
        'RETURNING level_before',
    );
    this.#touch = sql.prepare(
      'INSERT INTO login_throttle (key, tokens, at_ms, level_before) VALUES (?, 0, ?, 0) ' +
        'ON CONFLICT (key) DO UPDATE SET at_ms = excluded.at_ms',
    );
    this.#pruneBuckets = sql.prepare("DELETE FROM login_throttle WHERE key NOT LIKE 'k %' AND at_ms < ?");
    this.#pruneKnown = sql.prepare("DELETE FROM login_throttle WHERE key LIKE 'k %' AND at_ms < ?");
  }

  /** The rows of `keys` that exist, in one statement. */
  read(keys: readonly string[]): Map<string, BucketRow> {
    let statement = this.#reads.get(keys.length);
    if (!statement) {
      const marks = keys.map(() => '?').join(', ');
      statement = this.sql.prepare(`SELECT key, tokens, at_ms FROM login_throttle WHERE key IN (${marks})`);
      this.#reads.set(keys.length, statement);
    }
    const rows = new Map<string, BucketRow>();
    for (const row of statement.all(...keys) as { key: string; tokens: number; at_ms: number | string }[])
      rows.set(row.key, { tokens: Number(row.tokens), atMs: Number(row.at_ms) });
    return rows;
  }

  /** Takes a token from each bucket (one transaction); per bucket, the level it had just before. */
  fail(buckets: readonly { key: string; spec: BucketSpec }[], nowMs: number): number[] {
    const before = this.sql.transaction(() =>
      buckets.map(({ key, spec }) => {
        const { capacity, refillMs } = spec;
        const params = [key, capacity - 1, nowMs, capacity, refillMs, capacity, capacity, refillMs];
        // The level expression appears three times in the statement (level_before, the test and the decrement).
        const row = this.#fail.get(...params, ...params.slice(4), ...params.slice(4)) as { level_before: number };
        return Number(row.level_before);
      }),
    )();
    if (++this.#sincePrune >= PRUNE_EVERY) this.prune(nowMs);
    return before;
  }

  /** Records that `key` was seen at `nowMs` (a sign-in). */
  touch(key: string, nowMs: number): void {
    this.#touch.run(key, nowMs);
  }

  prune(nowMs: number): void {
    this.#sincePrune = 0;
    this.#pruneBuckets.run(nowMs - this.keepMs);
    this.#pruneKnown.run(nowMs - this.knownMs);
  }
}
