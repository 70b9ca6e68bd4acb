/**
 * The change feed: how every process sharing the database learns that a cache it keeps is stale.
 *
 * Writers append `(seq, topic, key)` to `changes` inside their own transaction — the tables caches depend on do it
 * through triggers (data/migrations, `changes_<table>_<op>`), so a write by any connection, the `meshgate` CLI
 * included, is published with no code path able to forget it; `publish()` covers changes no table row describes.
 * Each process tails the table: every poll reads `PRAGMA data_version` (changed by another connection's commit,
 * https://www.sqlite.org/pragma.html#pragma_data_version) and `total_changes()` (this connection's own writes), and
 * reads rows only when either moved. SQLite serialises writers, so seq order is commit order and a committed row
 * is never overtaken by a smaller seq.
 *
 * The table is trimmed to the newest rows; a process whose last seen seq fell below the trim point missed changes
 * it can no longer name, so every topic's `onReset` reloads from the tables themselves.
 */
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';

export interface ChangeFeed {
  /** Inside the caller's write transaction: appends (seq, topic, key) to `changes`. */
  publish(topic: string, key: string): void;
  /** Called in every process (including the writer's) for each new change after it committed, in seq order. */
  subscribe(topic: string, onChange: (key: string) => void): void;
  /** Called when this process fell behind the trim point: reload everything of that topic. */
  onReset(topic: string, reload: () => void): void;
  /**
   * Delivers at once whatever committed since the last poll: for a security decision (is this user still enabled?)
   * that must see a disable by the CLI on the very next request rather than within the polling bound.
   */
  catchUp(): void;
  /** Begins tailing: polls every `pollIntervalMs`, reading new rows only when the database moved. */
  start(): void;
  close(): void;
}

export interface ChangeFeedSettings {
  readonly pollIntervalMs: number;
  /** Rows kept at least; older ones go once they are also older than `retainSeconds`. */
  readonly retainRows: number;
  readonly retainSeconds: number;
}

/** Rows read per query: a burst (a bulk tuple write) is delivered over several reads, never all in memory. */
const BATCH = 1000;
/** Batches delivered per poll: a million-row burst is spread over polls rather than holding the event loop. */
const BATCHES_PER_POLL = 20;

interface ChangeRow {
  seq: number;
  topic: string;
  key: string;
}

export class SqliteChangeFeed implements ChangeFeed {
  readonly #subscribers = new Map<string, ((key: string) => void)[]>();
  readonly #resets = new Map<string, (() => void)[]>();
  readonly #statements;
  #lastSeq: number;
  #seenVersion = -1;
  #seenTotal = -1;
  #timer: NodeJS.Timeout | null = null;
  /** Polls that found the database unchanged and read nothing, and polls that read rows: tests and bench count them. */
  readonly stats = { idlePolls: 0, reads: 0, resets: 0 };

  #failing = false;

  constructor(
    sqlite: Database.Database,
    private readonly settings: ChangeFeedSettings,
    private readonly logger: Logger,
  ) {
    this.#statements = {
      // One statement for both counters: an idle poll is a single step of the VM.
      moved: sqlite.prepare(
        'SELECT (SELECT data_version FROM pragma_data_version()) AS version, total_changes() AS total',
      ),
      after: sqlite.prepare('SELECT seq, topic, key FROM changes WHERE seq > ? ORDER BY seq LIMIT ?'),
      oldest: sqlite.prepare('SELECT min(seq) FROM changes').pluck(),
      newest: sqlite.prepare("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0)").pluck(),
      insert: sqlite.prepare('INSERT INTO changes (topic, key, at) VALUES (?, ?, unixepoch())'),
      trim: sqlite.prepare('DELETE FROM changes WHERE seq <= ? AND at <= unixepoch() - ?'),
    };
    // Taken before any domain loads its state: a change committed while they load is delivered again, never lost.
    this.#lastSeq = this.#newest();
  }

  publish(topic: string, key: string): void {
    this.#statements.insert.run(topic, key);
  }

  subscribe(topic: string, onChange: (key: string) => void): void {
    listOf(this.#subscribers, topic).push(onChange);
  }

  onReset(topic: string, reload: () => void): void {
    listOf(this.#resets, topic).push(reload);
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.#tick(), this.settings.pollIntervalMs);
    // The feed alone never keeps a process alive.
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  catchUp(): void {
    this.poll();
  }

  /**
   * A poll on the interval: a database that cannot answer now (closed, busy, full) is logged once and tried again
   * on the next tick; a throw from a timer would end the process.
   */
  #tick(): void {
    try {
      this.poll();
      this.#failing = false;
    } catch (error) {
      if (!this.#failing) this.logger.warn({ err: error }, 'change feed: the database did not answer; polling on');
      this.#failing = true;
    }
  }

  /** One tailing step; start() runs it on its interval. Exposed so a test can step the feed deterministically. */
  poll(): void {
    const { version, total } = this.#statements.moved.get() as { version: number; total: number };
    if (version === this.#seenVersion && total === this.#seenTotal) {
      this.stats.idlePolls++;
      return;
    }
    this.#seenVersion = version;
    this.#seenTotal = total;
    this.stats.reads++;
    const oldest = this.#statements.oldest.get() as number | null;
    if (oldest !== null && oldest > this.#lastSeq + 1) this.#reset();
    else this.#deliverNew();
    this.#trim();
  }

  #deliverNew(): void {
    for (let batch = 0; batch < BATCHES_PER_POLL; batch++) {
      const rows = this.#statements.after.all(this.#lastSeq, BATCH) as ChangeRow[];
      for (const row of rows) {
        this.#lastSeq = row.seq;
        for (const onChange of this.#subscribers.get(row.topic) ?? []) this.#guard(row.topic, () => onChange(row.key));
      }
      if (rows.length < BATCH) return;
    }
    this.#seenTotal = -1; // more rows wait: the next poll reads on even if the database did not move again
  }

  #reset(): void {
    this.stats.resets++;
    this.logger.warn({ lastSeq: this.#lastSeq }, 'change feed: fell behind the trim point, reloading every topic');
    this.#lastSeq = this.#newest();
    for (const [topic, reloads] of this.#resets) for (const reload of reloads) this.#guard(topic, reload);
  }

  /** Each process trims after reading: deleting rows already trimmed by another is a no-op. */
  #trim(): void {
    const below = this.#lastSeq - this.settings.retainRows;
    if (below > 0) this.#statements.trim.run(below, this.settings.retainSeconds);
  }

  #newest(): number {
    return this.#statements.newest.get() as number;
  }

  /** A failing subscriber must not stop the others nor the feed: it is logged with its topic. */
  #guard(topic: string, run: () => void): void {
    try {
      run();
    } catch (error) {
      this.logger.error({ err: error, topic }, 'change feed subscriber failed');
    }
  }
}

function listOf<V>(map: Map<string, V[]>, topic: string): V[] {
  let list = map.get(topic);
  if (!list) {
    list = [];
    map.set(topic, list);
  }
  return list;
}
