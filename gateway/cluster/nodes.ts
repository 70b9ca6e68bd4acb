/**
 * The nodes of one cluster. On PostgreSQL several gateways share the database; each has an id (kept in its data
 * dir, so a restarted node is the same node) and says every `nodes.heartbeatMs` that it is alive, with the URL the
 * others reach it at. Work that lives on one node — a local job's processes and log files — records that node, and
 * another node asks it (`liveUrl`) or, once it has been silent for `nodes.deadAfterMs`, declares its work lost, as a
 * restarted gateway does for jobs it cannot re-attach. A SQLite gateway is a cluster of one: `self` is null.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SqlConnection } from '../db/connection.ts';
import { makePrivateDir } from '../db/storage.ts';

/**
 * How far the clocks of the nodes (and processes) sharing one database may disagree. What one writes with its own
 * clock for all to read — a spent nonce's expiry — is kept this much longer than that clock says, so a node whose
 * clock runs behind still finds it while it would accept the nonce again. Nodes are expected to keep time by NTP
 * (docs/operating.md); a skew beyond this reopens replays within it.
 */
export const NODE_CLOCK_SKEW_SECONDS = 300;

export interface ClusterNodes {
  /** This node's id; null when the gateway is the only node. */
  readonly self: string | null;
  /** True when `owner` names a node other than this one. */
  elsewhere(owner: string | null): owner is string;
  /** The URL of the node while it is alive; null once it has been silent past the bound (or never was). */
  liveUrl(nodeId: string): string | null;
  /** Every node silent past the bound, other than this one. */
  deadNodes(): string[];
  /** Begins the heartbeat (the process that owns this node's work calls it). */
  start(): void;
  close(): void;
}

export const ONE_NODE: ClusterNodes = {
  self: null,
  elsewhere: (owner): owner is string => false,
  liveUrl: () => null,
  deadNodes: () => [],
  start: () => {},
  close: () => {},
};

export interface NodeSettings {
  readonly url: string;
  readonly heartbeatMs: number;
  readonly deadAfterMs: number;
}

const NODE_ID_FILE = 'node-id';

/** The node's id: created at its first start, then read from its data dir. */
export function nodeIdOf(dataDir: string): string {
  const file = join(dataDir, NODE_ID_FILE);
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    makePrivateDir(dataDir);
    const id = randomUUID();
    writeFileSync(file, `${id}\n`, { mode: 0o600, flag: 'wx' });
    return id;
  }
}

export class SharedClusterNodes implements ClusterNodes {
  readonly #beat;
  readonly #url;
  readonly #dead;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    sql: SqlConnection,
    readonly self: string,
    private readonly settings: NodeSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.#beat = sql.prepare(
      'INSERT INTO cluster_nodes (node_id, url, heartbeat_at) VALUES (?, ?, ?) ' +
        'ON CONFLICT (node_id) DO UPDATE SET url = excluded.url, heartbeat_at = excluded.heartbeat_at',
    );
    this.#url = sql.prepare('SELECT url FROM cluster_nodes WHERE node_id = ? AND heartbeat_at >= ?').pluck();
    this.#dead = sql.prepare('SELECT node_id FROM cluster_nodes WHERE heartbeat_at < ? AND node_id <> ?').pluck();
  }

  elsewhere(owner: string | null): owner is string {
    return owner !== null && owner !== this.self;
  }

  liveUrl(nodeId: string): string | null {
    const url = this.#url.get(nodeId, this.now() - this.settings.deadAfterMs) as string | undefined;
    return url === undefined ? null : httpsOrigin(url);
  }

  deadNodes(): string[] {
    return this.#dead.all(this.now() - this.settings.deadAfterMs, this.self) as string[];
  }

  start(): void {
    if (this.#timer) return;
    this.#beatOnce();
    this.#timer = setInterval(() => this.#beatOnce(), this.settings.heartbeatMs);
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** A heartbeat the database could not take is skipped: the next one tries again, well within the bound. */
  #beatOnce(): void {
    try {
      this.#beat.run(this.self, this.settings.url, this.now());
    } catch {
      // The feed logs an unreachable database once; a missed beat needs no line of its own.
    }
  }
}

/**
 * The origin of a node URL read from the database, when it is https (as `nodes.url` must be); null otherwise. A
 * request sent on to a node carries its caller's token and is verified against the cluster CA only over TLS: a row
 * someone rewrote to plain HTTP must not receive that token.
 */
function httpsOrigin(url: string): string | null {
  const parsed = URL.parse(url);
  return parsed?.protocol === 'https:' ? parsed.origin : null;
}
