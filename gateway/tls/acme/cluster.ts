/**
 * ACME on several nodes sharing one PostgreSQL database. The ACME folder of the data dir (store.ts) is part of the
 * sealed cluster identity (gateway/cluster/identity.ts: `tls/acme/…`, AES-256-GCM under the node key), published by
 * this code rather than by a node's start: one node orders at a time, under a PostgreSQL advisory lock, and
 * publishes the account key, the certificate and its key, and the status (next renewal, last error, the backoff);
 * every node writes them into its data dir through the change feed and serves the certificate.
 *
 * The CA may validate a challenge against any node the name resolves to, so the answers are shared too
 * (SharedChallenges): the ordering node publishes the pending challenges (token and key authorization, which the
 * CA and anyone on the path see anyway; a TLS-ALPN-01 certificate is made by each node from them), every node
 * answers them on its HTTP-01 listener and its HTTPS listener, says so by publishing a receipt, and the CA is told
 * to validate once every live node's receipt is in (or after a bound, with a warning naming the silent nodes).
 *
 * The lock is a session lock on this process's one connection, which the bridge replaces after a break
 * (gateway/db/postgres/bridge-worker.ts), and a replaced session no longer holds it: whatever the lock holder
 * publishes is fenced — inside the publishing transaction, on its connection, the lock must still be this session's
 * (pg_locks), else nothing is published and the order is abandoned (OrderLockLost).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ClusterIdentity } from '../../cluster/identity.ts';
import type { SqlConnection } from '../../db/connection.ts';
import type { ChallengeResponder, PendingChallenge } from './order.ts';

/** What the ACME code needs of the cluster; app/cluster-identity.ts provides it on PostgreSQL. */
export interface AcmeCluster {
  readonly nodeId: string;
  /** The database path of a file of the ACME folder (`tls/acme/<relative>`). */
  pathOf(relative: string): string;
  /** The cluster's order lock, without waiting: false when another node holds it. */
  tryLock(): boolean;
  /** Whether this process's database session holds the order lock now (not after its connection was replaced). */
  holdsLock(): boolean;
  unlock(): void;
  /** Writes the named ACME files other nodes published over this node's copy; the default: the order's state. */
  pull(relative?: readonly string[]): void;
  /** Writes the files under a folder of the ACME folder over this node's copy. */
  pullFolder(relative: string): void;
  /** The database's copy of one ACME file, not written anywhere; null when it holds none. */
  peek(relative: string): string | null;
  /**
   * Publishes this node's copy of the named ACME files (relative to the folder); the default: the order's state.
   * Only while this session holds the order lock: else throws OrderLockLost and publishes nothing.
   */
  publish(relative?: readonly string[]): void;
  /** Publishes this node's challenge receipt (every node its own, without the lock). */
  publishReceipt(): void;
  /** The ids of the nodes whose heartbeat is fresh. */
  liveNodes(): string[];
}

/** The order lock is not (or no longer) this session's: what the order would publish is not published. */
export class OrderLockLost extends Error {
  constructor() {
    super('the cluster order lock was lost (the database connection was replaced); this order is abandoned');
    this.name = 'OrderLockLost';
  }
}

/** The ACME folder (store.ts) as the cluster identity names its files: published by this code alone. */
export const ACME_PREFIX = 'tls/acme/';
/** The advisory lock one node orders under. */
export const ACME_ORDER_LOCK = 'meshgate.acme.order';

/**
 * Whether this session holds the lock: pg_advisory_lock(bigint) shows in pg_locks with the key's high half in classid,
 * its low half in objid and objsubid 1 (https://www.postgresql.org/docs/current/view-pg-locks.html).
 */
const HOLDS_LOCK =
  "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted " +
  'AND objsubid = 1 AND classid::bigint = (hashtext(?)::bigint >> 32) & 4294967295 ' +
  'AND objid::bigint = hashtext(?)::bigint & 4294967295)';

/** The cluster on PostgreSQL: the identity's ACME folder, the order lock on its connection, the nodes' heartbeats. */
export function acmeClusterOf(
  sql: SqlConnection,
  identity: ClusterIdentity,
  nodeId: string,
  deadAfterMs: number,
): AcmeCluster {
  const holdsLock = () => sql.prepare(HOLDS_LOCK).pluck().get(ACME_ORDER_LOCK, ACME_ORDER_LOCK) === true;
  const fence = () => {
    if (!holdsLock()) throw new OrderLockLost();
  };
  const pathsOf = (relative: readonly string[]) => relative.map((r) => `${ACME_PREFIX}${r}`);
  return {
    nodeId,
    pathOf: (relative) => `${ACME_PREFIX}${relative}`,
    // A session lock on this process's connection: a node that dies releases it with its session
    // (https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS).
    tryLock: () => sql.prepare('SELECT pg_try_advisory_lock(hashtext(?))').pluck().get(ACME_ORDER_LOCK) === true,
    holdsLock,
    unlock: () => void sql.prepare('SELECT pg_advisory_unlock(hashtext(?))').get(ACME_ORDER_LOCK),
    pull: (relative = ORDER_FILES) => void identity.pullPaths(pathsOf(relative)),
    pullFolder: (relative) => void identity.pullUnder(`${ACME_PREFIX}${relative}/`),
    peek: (relative) => identity.peek(`${ACME_PREFIX}${relative}`)?.toString('utf8') ?? null,
    publish: (relative = ORDER_FILES) => identity.publishPaths(pathsOf(relative), fence),
    publishReceipt: () => identity.publishPaths(pathsOf([`${RECEIPTS_DIR}/${nodeId}`])),
    liveNodes: () =>
      sql
        .prepare('SELECT node_id FROM cluster_nodes WHERE heartbeat_at >= ?')
        .pluck()
        .all(Date.now() - deadAfterMs) as string[],
  };
}

/** The files of an order's outcome, relative to the ACME folder. */
export const ORDER_FILES = [
  'account-key.pem',
  'certificate-key.pem',
  'certificate.pem',
  'certificate-directory',
  'status.json',
] as const;
export const CHALLENGES_FILE = 'challenges.json';
export const RECEIPTS_DIR = 'challenge-receipts';

/** A challenge as it travels: what every node needs to answer it. */
export interface SharedEntry {
  readonly type: PendingChallenge['type'];
  readonly name: string;
  readonly token: string;
  readonly keyAuthorization: string;
}

const keyOf = (entry: Pick<SharedEntry, 'type' | 'name' | 'token'>) => `${entry.type} ${entry.name} ${entry.token}`;

export interface SharedChallengeOptions {
  readonly dir: string;
  readonly cluster: AcmeCluster;
  /** Answers (or stops answering) a challenge in this node's processes. */
  readonly local: ChallengeResponder;
  /** The TLS-ALPN-01 certificate for a challenge another node published. */
  readonly alpnChallenge: (entry: SharedEntry) => Promise<PendingChallenge>;
  readonly logger: Logger;
  /** The names this node orders: an entry for any other name is not answered. */
  readonly names: readonly string[];
  /** How long the ordering node waits for the other nodes' receipts before it lets the CA validate. */
  readonly receiptsWithinMs: number;
}

/** How often the ordering node looks for the other nodes' receipts (each look is a query). */
const RECEIPTS_POLL_MS = 250;

export class SharedChallenges implements ChallengeResponder {
  readonly #options: SharedChallengeOptions;
  /** What this node answers now, by entry key. */
  readonly #answered = new Map<string, PendingChallenge>();
  /** Entries this node published (as the ordering node): the file it writes holds exactly these. */
  readonly #own = new Map<string, SharedEntry>();
  /** For each own entry, what its order's abort does: it stops answering it, and unpublishes it while it may. */
  readonly #onAbort = new Map<string, { signal: AbortSignal; listener: () => void }>();
  #syncing: Promise<void> = Promise.resolve();

  constructor(options: SharedChallengeOptions) {
    this.#options = options;
  }

  /**
   * Answers the challenge here, publishes it for the other nodes, and waits for their receipts. An order aborted (its
   * deadline, a stopping gateway) or whose lock this session no longer holds publishes nothing: another node may be
   * ordering by then, and the list is its. A failure leaves the challenge answered nowhere.
   */
  async present(challenge: PendingChallenge, signal?: AbortSignal): Promise<void> {
    const { cluster, local } = this.#options;
    const entry = entryOf(challenge);
    const key = keyOf(entry);
    this.#mayPublish(signal, true);
    await local.present(challenge);
    let digest: string;
    try {
      this.#answered.set(key, challenge);
      this.#own.set(key, entry);
      // Checked again: the local answer took a while (the workers), and the order may have ended meanwhile.
      this.#mayPublish(signal, true);
      digest = this.#writeList();
      this.#writeReceipt(digest);
      cluster.publish([CHALLENGES_FILE, `${RECEIPTS_DIR}/${cluster.nodeId}`]);
    } catch (error) {
      this.#own.delete(key);
      this.#answered.delete(key);
      this.#writeReceipt(this.#writeList());
      await local.withdraw(challenge).catch(() => undefined);
      throw error;
    }
    if (signal) {
      const listener = () => this.#abandon(key, challenge);
      this.#onAbort.set(key, { signal, listener });
      signal.addEventListener('abort', listener, { once: true });
    }
    await this.#receipts(digest, signal);
  }

  /** Stops answering the challenge; publishes the shorter list while the order may (as present). */
  async withdraw(challenge: PendingChallenge, signal?: AbortSignal): Promise<void> {
    const { cluster, local, logger } = this.#options;
    const key = keyOf(entryOf(challenge));
    this.#forget(key);
    this.#answered.delete(key);
    await local.withdraw(challenge);
    this.#writeReceipt(this.#writeList());
    if (!this.#mayPublish(signal, false)) return;
    try {
      cluster.publish([CHALLENGES_FILE, `${RECEIPTS_DIR}/${cluster.nodeId}`]);
    } catch (error) {
      // The list stays as published; the next order replaces it, and a stale token validates nothing.
      logger.warn({ err: (error as Error).message }, 'ACME: a withdrawn challenge could not be unpublished');
    }
  }

  /**
   * Whether this node may publish its list now: not once the order's signal aborted, nor when this session lost the
   * order lock (each then throws when `strict`, and is false otherwise).
   */
  #mayPublish(signal: AbortSignal | undefined, strict: boolean): boolean {
    if (signal?.aborted) {
      if (strict) signal.throwIfAborted();
      return false;
    }
    let held = false;
    try {
      held = this.#options.cluster.holdsLock();
    } catch (error) {
      if (strict) throw error;
    }
    if (!held && strict) throw new OrderLockLost();
    return held;
  }

  #forget(key: string): void {
    this.#own.delete(key);
    const abort = this.#onAbort.get(key);
    if (abort) abort.signal.removeEventListener('abort', abort.listener);
    this.#onAbort.delete(key);
  }

  /** An own entry whose order ended without withdrawing it (aborted mid-step): cleared here, and there while ours. */
  #abandon(key: string, challenge: PendingChallenge): void {
    const { cluster, local, logger } = this.#options;
    if (!this.#own.has(key)) return;
    this.#forget(key);
    this.#answered.delete(key);
    this.#writeReceipt(this.#writeList());
    const failed = (error: unknown) =>
      logger.warn({ err: (error as Error).message }, 'ACME: an abandoned challenge could not be withdrawn');
    local.withdraw(challenge).catch(failed);
    try {
      // The lock is released after the abort: while it is this session's, the list is still this node's to clear.
      if (cluster.holdsLock()) cluster.publish([CHALLENGES_FILE, `${RECEIPTS_DIR}/${cluster.nodeId}`]);
    } catch (error) {
      failed(error);
    }
  }

  /** Another node published its pending challenges (or withdrew them): answer exactly those, then say so. */
  sync(): Promise<void> {
    this.#syncing = this.#syncing.then(
      () => this.#syncOnce(),
      () => this.#syncOnce(),
    );
    return this.#syncing;
  }

  async #syncOnce(): Promise<void> {
    const { logger, local, cluster } = this.#options;
    cluster.pull([CHALLENGES_FILE]);
    const text = this.#read(CHALLENGES_FILE);
    if (text === null) return;
    let entries: SharedEntry[];
    try {
      entries = parseEntries(text);
    } catch (error) {
      logger.error({ err: (error as Error).message }, 'ACME: the shared challenges do not parse; none answered');
      entries = [];
    }
    const names = new Set(this.#options.names);
    const wanted = new Map(entries.filter((entry) => names.has(entry.name)).map((entry) => [keyOf(entry), entry]));
    for (const [key, challenge] of this.#answered) {
      if (wanted.has(key)) continue;
      this.#answered.delete(key);
      await local.withdraw(challenge);
    }
    for (const [key, entry] of wanted) {
      if (this.#answered.has(key)) continue;
      const challenge = entry.type === 'http-01' ? { ...entry, type: 'http-01' as const } : await this.#alpn(entry);
      if (challenge === null) continue;
      await local.present(challenge);
      this.#answered.set(key, challenge);
    }
    this.#writeReceipt(digestOf(text));
    cluster.publishReceipt();
  }

  async #alpn(entry: SharedEntry): Promise<PendingChallenge | null> {
    try {
      return await this.#options.alpnChallenge(entry);
    } catch (error) {
      this.#options.logger.error({ name: entry.name, err: (error as Error).message }, 'ACME: no TLS-ALPN-01 answer');
      return null;
    }
  }

  /** Waits until every live node's receipt names `digest`, or the bound passes (or the order is abandoned). */
  async #receipts(digest: string, signal: AbortSignal | undefined): Promise<void> {
    const { cluster, logger, receiptsWithinMs } = this.#options;
    const until = Date.now() + receiptsWithinMs;
    for (;;) {
      signal?.throwIfAborted();
      cluster.pullFolder(RECEIPTS_DIR);
      const silent = cluster.liveNodes().filter((node) => this.#read(`${RECEIPTS_DIR}/${node}`)?.trim() !== digest);
      if (silent.length === 0) return;
      if (Date.now() >= until) {
        logger.warn({ nodes: silent }, 'ACME: nodes did not confirm the pending challenges; the CA validates anyway');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, RECEIPTS_POLL_MS));
    }
  }

  /** The list this node publishes (its own entries); returns its digest. */
  #writeList(): string {
    const text = `${JSON.stringify([...this.#own.values()])}\n`;
    this.#write(CHALLENGES_FILE, text);
    return digestOf(text);
  }

  #writeReceipt(digest: string): void {
    mkdirSync(join(this.#options.dir, RECEIPTS_DIR), { recursive: true, mode: 0o700 });
    this.#write(`${RECEIPTS_DIR}/${this.#options.cluster.nodeId}`, `${digest}\n`);
  }

  #write(relative: string, text: string): void {
    mkdirSync(this.#options.dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(this.#options.dir, relative), text, { mode: 0o600 });
  }

  #read(relative: string): string | null {
    const file = join(this.#options.dir, relative);
    return existsSync(file) ? readFileSync(file, 'utf8') : null;
  }
}

function entryOf(challenge: PendingChallenge): SharedEntry {
  const { type, name, keyAuthorization } = challenge;
  return { type, name, keyAuthorization, token: challenge.type === 'http-01' ? challenge.token : '' };
}

function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The published list: data from the database, so each entry is checked before it is answered. */
function parseEntries(text: string): SharedEntry[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error('not a list');
  return parsed.map((item: Partial<SharedEntry>) => {
    const { type, name, token, keyAuthorization } = item;
    if ((type !== 'http-01' && type !== 'tls-alpn-01') || typeof name !== 'string') throw new Error('bad entry');
    if (typeof token !== 'string' || typeof keyAuthorization !== 'string') throw new Error('bad entry');
    return { type, name, token, keyAuthorization };
  });
}
