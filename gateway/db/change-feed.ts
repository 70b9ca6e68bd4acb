/**
 * The change feed: how every process sharing the database learns that a cache it keeps is stale.
 *
 * Writers append `(seq, topic, key)` to `changes` inside their own transaction — the tables caches depend on do it
 * through triggers (data/migrations, `changes_<table>_<op>`), so a write by any connection, the `meshgate` CLI
 * included, is published with no code path able to forget it; `publish()` covers changes no table row describes.
 * Each process tails the table, reading rows only when the database moved: on SQLite it polls `PRAGMA
 * data_version` (https://www.sqlite.org/pragma.html#pragma_data_version), on PostgreSQL it listens for the
 * notification every insert sends (postgres/change-feed.ts). On both, seq order is commit order.
 *
 * The table is trimmed to the newest rows; a process whose last seen seq fell below the trim point missed changes
 * it can no longer name, so every topic's `onReset` reloads from the tables themselves.
 */
import type { Logger } from 'pino';
import type { SqlConnection, SqlStatement } from './connection.ts';
import { FailedDeliveries } from './failed-deliveries.ts';
import { WalIndexWatch } from './wal-index.ts';

export interface ChangeFeed {
  /** Inside the caller's write transaction: appends (seq, topic, key) to `changes`. */
  publish(topic: string, key: string): void;
  /** Called in every process (including the writer's) for each new change after it committed, in seq order. */
  subscribe(topic: string, onChange: (key: string) => void): void;
  /** Called when this process fell behind the trim point: reload everything of that topic. */
  onReset(topic: string, reload: () => void): void;
  /**
   * One poll now, not on the interval (up to 20 batches of what committed since the last; on PostgreSQL, once a
   * notification arrived): for a security decision (is this user still enabled?) that must see a disable by the CLI
   * on every request read after the event-loop turn it committed in, rather than within the polling bound. Requests
   * of one turn may share one look (SQLite: SqliteChangeFeed).
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

/** Both engines: `unixepoch()` is SQLite's, and a function of the same name on PostgreSQL (data/migrations-pg). */
export const INSERT_CHANGE = 'INSERT INTO changes (topic, key, at) VALUES (?, ?, unixepoch())';

interface ChangeRow {
  seq: number;
  topic: string;
  key: string;
}

/** The statements a tailing feed runs; each engine writes its own. */
export interface FeedStatements {
  readonly after: SqlStatement;
  readonly insert: SqlStatement;
  readonly trim: SqlStatement;
  /** The highest seq written so far (a fresh reader starts after it). */
  readonly newest: SqlStatement;
}

/**
 * What both engines' feeds share: delivering rows after the last seen seq in batches, to every subscriber of their
 * topic, and reloading every topic when this process fell behind the trim point. An engine says when the database
 * moved (`moved`) and whether rows this process never saw were trimmed (`missedTrimmed`).
 */
export abstract class TailingChangeFeed implements ChangeFeed {
  readonly #subscribers = new Map<string, ((key: string) => void)[]>();
  readonly #resets = new Map<string, (() => void)[]>();
  protected lastSeq: number;
  #failing = false;
  #polling = false;
  readonly #failed: FailedDeliveries;
  /** Polls that found the database unchanged and read nothing, and polls that read rows: tests and bench count them. */
  readonly stats = { idlePolls: 0, reads: 0, resets: 0 };

  constructor(
    protected readonly statements: FeedStatements,
    protected readonly settings: ChangeFeedSettings,
    protected readonly logger: Logger,
  ) {
    // Taken before any domain loads its state: a change committed while they load is delivered again, never lost.
    this.lastSeq = this.#newest();
    this.#failed = new FailedDeliveries(logger, (topic) => this.#resets.get(topic) ?? []);
  }

  /** The seq of the last change this process has taken in. */
  get seenUpTo(): number {
    return this.lastSeq;
  }

  /** True when the database may hold rows this process has not read (an idle poll reads nothing). */
  protected abstract moved(): boolean;
  /** True when rows after lastSeq were trimmed before this process read them. */
  protected abstract missedTrimmed(): boolean;
  abstract start(): void;
  abstract close(): void;

  publish(topic: string, key: string): void {
    this.statements.insert.run(topic, key);
  }

  subscribe(topic: string, onChange: (key: string) => void): void {
    listOf(this.#subscribers, topic).push(onChange);
  }

  onReset(topic: string, reload: () => void): void {
    listOf(this.#resets, topic).push(reload);
  }

  catchUp(): void {
    this.poll();
  }

  /**
   * A poll on the interval: a database that cannot answer now (closed, busy, full) is logged once and tried again
   * on the next tick; a throw from a timer would end the process.
   */
  protected tick(): void {
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
    // A subscriber that looks the feed up while this poll delivers (a user lookup, say) is inside it: a poll of its
    // own would read the rows this one is walking and deliver them twice.
    if (this.#polling) return;
    this.#polling = true;
    let read = false;
    try {
      this.#failed.retry();
      if (!this.moved()) {
        this.stats.idlePolls++;
        return;
      }
      this.stats.reads++;
      if (this.missedTrimmed()) this.#reset();
      else if (!this.#deliverNew()) this.readOnNextPoll();
      read = true;
      this.#trim();
    } catch (error) {
      // moved() took the sign that rows wait and they were not read: the next poll reads whether or not anything
      // commits meanwhile. A failed trim (a DELETE, waiting on the write lock) asks for no such read.
      if (!read) this.readOnNextPoll();
      throw error;
    } finally {
      this.#polling = false;
    }
  }

  /** More rows wait than one poll delivers: the next poll must read even if the database did not move again. */
  protected abstract readOnNextPoll(): void;

  /** False when rows remain after this poll's batches. */
  #deliverNew(): boolean {
    for (let batch = 0; batch < BATCHES_PER_POLL; batch++) {
      const rows = this.statements.after.all(this.lastSeq, BATCH) as ChangeRow[];
      for (const row of rows) {
        this.lastSeq = row.seq;
        const subscribers = this.#subscribers.get(row.topic) ?? [];
        for (const onChange of subscribers) this.#failed.deliver(row.topic, onChange, row.key);
      }
      if (rows.length < BATCH) return true;
    }
    return false;
  }

  #reset(): void {
    this.stats.resets++;
    this.logger.warn({ lastSeq: this.lastSeq }, 'change feed: fell behind the trim point, reloading every topic');
    this.lastSeq = this.#newest();
    for (const [topic, reloads] of this.#resets) for (const reload of reloads) this.#failed.reload(topic, reload);
  }

  /** Each process trims after reading: deleting rows already trimmed by another is a no-op. */
  #trim(): void {
    const below = this.lastSeq - this.settings.retainRows;
    if (below > 0) this.statements.trim.run(below, this.settings.retainSeconds);
  }

  #newest(): number {
    return this.statements.newest.get() as number;
  }
}

/** The longest requests share one look at the WAL-index (SqliteChangeFeed.catchUp). */
const SHARED_LOOK_MS = 1;

/**
 * SQLite: every poll reads `PRAGMA data_version` (changed by another connection's commit) and `total_changes()`
 * (this connection's own writes) and reads rows only when either moved. SQLite serialises writers, so seq order is
 * commit order, and AUTOINCREMENT never reuses nor skips a committed number: the oldest row above lastSeq + 1 means
 * rows were trimmed unread. In front of those counters, the WAL-index header (wal-index.ts) answers "nothing
 * committed" without a read transaction, which is what most polls (one per authenticated request) find.
 */
export class SqliteChangeFeed extends TailingChangeFeed {
  /** Null without a `-shm` file to read, and once closed (its descriptor number may then name another file). */
  #walIndex: WalIndexWatch | null;
  readonly #moved: SqlStatement;
  readonly #oldest: SqlStatement;
  #seenVersion = -1;
  #seenTotal = -1;
  #timer: NodeJS.Timeout | null = null;
  /**
   * A look found the wal-index unchanged in this turn of the event loop: catchUp() answers from it until the
   * check phase that follows (setImmediate) clears it. Under load one turn reads many requests off their sockets,
   * and each caught the feed up with its own `pread`, ~1.7 µs a request (bench/README.md, proxy). A disable
   * another process commits while a turn runs has no order with the requests that turn already read (the
   * kernel's socket buffers held them before the commit was seen), so they may share one look; every request
   * read in a later turn looks again, so the disable reaches it. A turn is not always short (libuv reads a socket
   * only when its callback runs, and polls again without blocking while events keep coming), so a shared look
   * also ends SHARED_LOOK_MS after it was taken. The look's own rule is unchanged: a changed
   * header, or one the previous poll left unread (readOnNextPoll), clears it at once. A look taken from within a
   * check phase (no request's stages run there: they run in the poll phase's I/O callbacks and their microtasks)
   * stands until the next check phase.
   */
  #quietThisTurn = false;
  #quietSince = 0;
  readonly #newTurn = (): void => {
    this.#quietThisTurn = false;
  };

  readonly #now: () => number;

  /**
   * `sqlite.name`: better-sqlite3's file name of the database, whose `-shm` file the WAL-index watch reads. `now`:
   * the clock that ends a shared look, in milliseconds.
   */
  constructor(
    sqlite: SqlConnection & { readonly name?: string },
    settings: ChangeFeedSettings,
    logger: Logger,
    now: () => number = () => performance.now(),
  ) {
    super(
      {
        after: sqlite.prepare('SELECT seq, topic, key FROM changes WHERE seq > ? ORDER BY seq LIMIT ?'),
        newest: sqlite.prepare("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0)").pluck(),
        insert: sqlite.prepare(INSERT_CHANGE),
        trim: sqlite.prepare('DELETE FROM changes WHERE seq <= ? AND at <= unixepoch() - ?'),
      },
      settings,
      logger,
    );
    // One statement for both counters: an idle poll is a single step of the VM.
    this.#moved = sqlite.prepare(
      'SELECT (SELECT data_version FROM pragma_data_version()) AS version, total_changes() AS total',
    );
    this.#oldest = sqlite.prepare('SELECT min(seq) FROM changes').pluck();
    this.#walIndex = sqlite.name ? WalIndexWatch.open(sqlite.name) : null;
    this.#now = now;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.tick(), this.settings.pollIntervalMs);
    // The feed alone never keeps a process alive.
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#walIndex?.close();
    this.#walIndex = null;
  }

  /** The request path's look (UserDirectory.byId): once a turn while nothing commits; poll() always looks. */
  override catchUp(): void {
    if (!this.#quietThisTurn || this.#now() - this.#quietSince > SHARED_LOOK_MS) this.poll();
  }

  protected moved(): boolean {
    // Read before the counters, so a commit landing between the two is seen by them now or by the header next time.
    if (this.#walIndex?.unchanged()) {
      if (!this.#quietThisTurn) setImmediate(this.#newTurn);
      this.#quietThisTurn = true;
      this.#quietSince = this.#now();
      return false;
    }
    this.#quietThisTurn = false;
    const { version, total } = this.#moved.get() as { version: number; total: number };
    if (version === this.#seenVersion && total === this.#seenTotal) return false;
    this.#seenVersion = version;
    this.#seenTotal = total;
    return true;
  }

  protected missedTrimmed(): boolean {
    const oldest = this.#oldest.get() as number | null;
    return oldest !== null && oldest > this.lastSeq + 1;
  }

  protected readOnNextPoll(): void {
    this.#quietThisTurn = false;
    this.#walIndex?.forget();
    this.#seenTotal = -1;
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
