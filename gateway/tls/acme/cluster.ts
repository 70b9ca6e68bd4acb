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
  unlock(): void;
  /** Writes the ACME files other nodes published over this node's copy. */
  pull(): void;
  /** Publishes this node's copy of the named ACME files (relative to the folder); the default: the order's state. */
  publish(relative?: readonly string[]): void;
  /** The ids of the nodes whose heartbeat is fresh. */
  liveNodes(): string[];
}

/** The ACME folder (store.ts) as the cluster identity names its files: published by this code alone. */
export const ACME_PREFIX = 'tls/acme/';
/** The advisory lock one node orders under. */
export const ACME_ORDER_LOCK = 'meshgate.acme.order';

/** The cluster on PostgreSQL: the identity's ACME folder, the order lock on its connection, the nodes' heartbeats. */
export function acmeClusterOf(
  sql: SqlConnection,
  identity: ClusterIdentity,
  nodeId: string,
  deadAfterMs: number,
): AcmeCluster {
  return {
    nodeId,
    pathOf: (relative) => `${ACME_PREFIX}${relative}`,
    // A session lock on this process's connection: a node that dies releases it with its session
    // (https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS).
    tryLock: () => sql.prepare('SELECT pg_try_advisory_lock(hashtext(?))').pluck().get(ACME_ORDER_LOCK) === true,
    unlock: () => void sql.prepare('SELECT pg_advisory_unlock(hashtext(?))').get(ACME_ORDER_LOCK),
    pull: () => void identity.pull(),
    publish: (relative = ORDER_FILES) => identity.publishPaths(relative.map((r) => `${ACME_PREFIX}${r}`)),
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

export class SharedChallenges implements ChallengeResponder {
  readonly #options: SharedChallengeOptions;
  /** What this node answers now, by entry key. */
  readonly #answered = new Map<string, PendingChallenge>();
  /** Entries this node published (as the ordering node): the file it writes holds exactly these. */
  readonly #own = new Map<string, SharedEntry>();
  #syncing: Promise<void> = Promise.resolve();

  constructor(options: SharedChallengeOptions) {
    this.#options = options;
  }

  async present(challenge: PendingChallenge): Promise<void> {
    const entry = entryOf(challenge);
    await this.#options.local.present(challenge);
    this.#answered.set(keyOf(entry), challenge);
    this.#own.set(keyOf(entry), entry);
    const digest = this.#writeList();
    this.#writeReceipt(digest);
    this.#options.cluster.publish([CHALLENGES_FILE, `${RECEIPTS_DIR}/${this.#options.cluster.nodeId}`]);
    await this.#receipts(digest);
  }

  async withdraw(challenge: PendingChallenge): Promise<void> {
    const key = keyOf(entryOf(challenge));
    this.#own.delete(key);
    this.#answered.delete(key);
    await this.#options.local.withdraw(challenge);
    this.#writeReceipt(this.#writeList());
    this.#options.cluster.publish([CHALLENGES_FILE, `${RECEIPTS_DIR}/${this.#options.cluster.nodeId}`]);
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
    cluster.publish([`${RECEIPTS_DIR}/${cluster.nodeId}`]);
  }

  async #alpn(entry: SharedEntry): Promise<PendingChallenge | null> {
    try {
      return await this.#options.alpnChallenge(entry);
    } catch (error) {
      this.#options.logger.error({ name: entry.name, err: (error as Error).message }, 'ACME: no TLS-ALPN-01 answer');
      return null;
    }
  }

  /** Waits until every live node's receipt names `digest`, or the bound passes. */
  async #receipts(digest: string): Promise<void> {
    const { cluster, logger, receiptsWithinMs } = this.#options;
    const until = Date.now() + receiptsWithinMs;
    for (;;) {
      cluster.pull();
      const silent = cluster.liveNodes().filter((node) => this.#read(`${RECEIPTS_DIR}/${node}`)?.trim() !== digest);
      if (silent.length === 0) return;
      if (Date.now() >= until) {
        logger.warn({ nodes: silent }, 'ACME: nodes did not confirm the pending challenges; the CA validates anyway');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
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
