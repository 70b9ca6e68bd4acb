/**
 * The change feed on PostgreSQL. Every insert into `changes` sends a notification on `meshgate_changes` (a trigger,
 * data/migrations-pg), delivered at commit to every node's listening connection
 * (https://www.postgresql.org/docs/current/sql-notify.html); a poll reads rows only after one arrived. Notifications
 * are a wake-up, not the record: the `changes` table is, so a node whose listening connection dropped (and missed
 * notifications meanwhile) reads on from its last seq on reconnecting, and a slow safety poll reads anyway.
 *
 * Sequence values are not transactional on PostgreSQL (a rolled-back insert leaves a gap), so the oldest row cannot
 * tell a reader it missed trimmed rows: trimming records the highest seq it removed in `changes_trimmed`.
 */
import type { Logger } from 'pino';
import type { ChangeFeedSettings } from '../change-feed.ts';
import { INSERT_CHANGE, TailingChangeFeed } from '../change-feed.ts';
import type { SqlConnection, SqlStatement } from '../connection.ts';

export const CHANGES_CHANNEL = 'meshgate_changes';
/** The safety poll: a change reaches a node within this even if its notifications are lost. */
export const SAFETY_POLL_MS = 1000;
const RECONNECT_MS = 500;

/** The listening side: a dedicated connection (LISTEN holds its session) that calls back on each notification. */
export interface ChangeListener {
  close(): Promise<void>;
}
export type ListenFn = (onNotify: () => void, onLost: (error: Error) => void) => Promise<ChangeListener>;

export class PgChangeFeed extends TailingChangeFeed {
  readonly #trimmedUpTo: SqlStatement;
  #notified = true;
  /** Safety polls so far: a change that needed one reached this node late (its notification was lost). */
  safetyPolls = 0;
  #timer: NodeJS.Timeout | null = null;
  #reconnect: NodeJS.Timeout | null = null;
  #listener: ChangeListener | null = null;
  #closed = false;
  #lostLogged = false;

  constructor(
    sql: SqlConnection,
    private readonly listen: ListenFn,
    settings: ChangeFeedSettings,
    logger: Logger,
    private readonly safetyPollMs = SAFETY_POLL_MS,
  ) {
    super(
      {
        after: sql.prepare('SELECT seq, topic, key FROM changes WHERE seq > ? ORDER BY seq LIMIT ?'),
        newest: sql
          .prepare('SELECT greatest((SELECT max(seq) FROM changes), (SELECT upto FROM changes_trimmed))')
          .pluck(),
        insert: sql.prepare(INSERT_CHANGE),
        trim: sql.prepare(
          'WITH gone AS (DELETE FROM changes WHERE seq <= ? AND at <= unixepoch() - ? RETURNING seq) ' +
            'UPDATE changes_trimmed SET upto = greatest(upto, (SELECT max(seq) FROM gone))',
        ),
      },
      settings,
      logger,
    );
    this.#trimmedUpTo = sql.prepare('SELECT upto FROM changes_trimmed').pluck();
  }

  start(): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setInterval(() => {
      this.safetyPolls++;
      this.#notified = true;
      this.tick();
    }, this.safetyPollMs);
    this.#timer.unref();
    this.#connect();
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#reconnect) clearTimeout(this.#reconnect);
    this.#timer = null;
    this.#reconnect = null;
    void this.#listener?.close();
    this.#listener = null;
  }

  /** Resolves once the listening connection is up (tests wait for it before writing elsewhere). */
  ready: Promise<void> = Promise.resolve();

  #connect(): void {
    this.ready = this.listen(
      () => {
        this.#notified = true;
        this.tick();
      },
      (error) => this.#lost(error),
    ).then(
      (listener) => {
        if (this.#closed) return void listener.close();
        this.#listener = listener;
        this.#lostLogged = false;
        // Whatever committed while not listening is read now.
        this.#notified = true;
        this.tick();
      },
      (error: Error) => this.#lost(error),
    );
  }

  #lost(error: Error): void {
    if (this.#closed) return;
    if (!this.#lostLogged)
      this.logger.warn({ err: error }, 'change feed: the listening connection dropped; reconnecting');
    this.#lostLogged = true;
    void this.#listener?.close();
    this.#listener = null;
    this.#reconnect ??= setTimeout(() => {
      this.#reconnect = null;
      this.#connect();
    }, RECONNECT_MS);
    this.#reconnect.unref();
  }

  /** A notification arrived that no poll has acted on yet. */
  get notified(): boolean {
    return this.#notified;
  }

  protected moved(): boolean {
    const moved = this.#notified;
    this.#notified = false;
    return moved;
  }

  protected missedTrimmed(): boolean {
    return (this.#trimmedUpTo.get() as number) > this.lastSeq;
  }

  protected readOnNextPoll(): void {
    this.#notified = true;
  }
}

/** LISTEN on its own node-postgres connection (loaded only on this engine). */
export function pgListener(url: string): ListenFn {
  return async (onNotify, onLost) => {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url, application_name: 'meshgate-feed' });
    client.on('error', onLost);
    client.on('end', () => onLost(new Error('connection ended')));
    client.on('notification', onNotify);
    await client.connect();
    await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    return {
      close: async () => {
        client.removeAllListeners('end');
        await client.end().catch(() => undefined);
      },
    };
  };
}
