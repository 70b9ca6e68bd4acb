/**
 * Retrieval on a cluster of nodes sharing PostgreSQL. A stream may land on any node: stream tokens are signed with
 * a key of the cluster identity (keys/stream-token.key) and spent in the shared database, so a token handed out by
 * one node verifies, once, on any node; a cancel is published on the change feed and every node aborts the job's
 * streams. Only a job created with a `credential_override` is bound to its node, whose memory alone holds the
 * override (it is never stored): its streams are sent there (an SSE redirect, the node's address in the gRPC block).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ClusterNodes, NODE_CLOCK_SKEW_SECONDS } from '../../gateway/cluster/nodes.ts';
import type { ChangeFeed } from '../../gateway/db/change-feed.ts';
import type { SqlConnection } from '../../gateway/db/connection.ts';
import type { ActiveRuns } from './runs.ts';
import type { StoredRequest } from './wire.ts';

export const RETRIEVAL_CANCEL_TOPIC = 'retrieval_cancel';
/** Accepted spends between prunes of expired ones. */
const PRUNE_EVERY = 256;

/**
 * The stream tokens' HMAC key: made at the first start, kept with the keys (so with the cluster identity, which
 * every node of a cluster takes from the database). Not per start: the nodes of a cluster start at different times
 * and must verify each other's tokens, so a restart does not retire tokens; they expire (grpcTokenTtlSeconds).
 */
export function streamTokenKey(dataDir: string): Buffer {
  const dir = join(dataDir, 'keys');
  const file = join(dir, 'stream-token.key');
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    try {
      writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file}: expected a 32-byte base64 key`);
  return key;
}

/**
 * Spends a nonce in the database: one insert decides, whichever process or node tries, and the nonce outlives a
 * restart, so a ticket spent before one is still spent after it (the key outlives it too: streamTokenKey).
 */
export function spendInDatabase(sql: SqlConnection, now: () => Date): (nonce: string, expiry: number) => boolean {
  const insert = sql.prepare(
    'INSERT INTO retrieval_spent_tokens (nonce, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING',
  );
  const prune = sql.prepare('DELETE FROM retrieval_spent_tokens WHERE expires_at < ?');
  let sincePrune = 0;
  return (nonce, expiry) => {
    const spent = insert.run(nonce, expiry).changes === 1;
    if (spent && ++sincePrune >= PRUNE_EVERY) {
      sincePrune = 0;
      // Kept past expiry by the nodes' allowed clock skew: a node whose clock is behind, and would still take the
      // ticket as unexpired, finds it spent.
      prune.run(Math.floor(now().getTime() / 1000) - NODE_CLOCK_SKEW_SECONDS);
    }
    return spent;
  };
}

export class RetrievalNodes {
  constructor(
    private readonly nodes: ClusterNodes,
    private readonly feed: ChangeFeed,
  ) {}

  get clustered(): boolean {
    return this.nodes.self !== null;
  }

  /** The request as stored: naming this node when it alone will hold the job's credential override. */
  stamp(request: StoredRequest, hasOverride: boolean): StoredRequest {
    return hasOverride && this.nodes.self !== null ? { ...request, override_node: this.nodes.self } : request;
  }

  /** Where the job's streams must be served when that is another node: its URL, or null when it is this one. */
  streamNode(request: StoredRequest): { url: string | null } | null {
    const node = request.override_node ?? null;
    return this.nodes.elsewhere(node) ? { url: this.nodes.liveUrl(node) } : null;
  }

  publishCancel(jobId: string): void {
    if (this.clustered) this.feed.publish(RETRIEVAL_CANCEL_TOPIC, jobId);
  }

  /** Every process of every node aborts its streams of a job canceled anywhere. */
  follow(runs: ActiveRuns): void {
    if (this.clustered) this.feed.subscribe(RETRIEVAL_CANCEL_TOPIC, (jobId) => runs.cancel(jobId));
  }
}
