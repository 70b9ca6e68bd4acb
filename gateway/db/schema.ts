/**
 * The kernel's own tables: the change feed every process tails, the mesh replay cache every process shares, and the
 * cluster identity every node of a PostgreSQL cluster shares.
 */
import { blob, index, integer, primaryKey, sqliteTable, text } from './drizzle.ts';

/**
 * One row per committed change a process-local cache depends on. `seq` is AUTOINCREMENT so a number is never
 * reused after a trim: a reader that saw seq n and finds the oldest row above n + 1 knows it missed changes.
 */
export const changes = sqliteTable('changes', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  topic: text('topic').notNull(),
  key: text('key').notNull(),
  /** Epoch seconds of the commit: trimming keeps rows younger than feed.retainSeconds whatever their count. */
  at: integer('at').notNull(),
});

/** Accepted mesh nonces per peer, each until its signature leaves the acceptance window. */
export const meshReplay = sqliteTable(
  'mesh_replay',
  {
    peerId: text('peer_id').notNull(),
    nonce: text('nonce').notNull(),
    /** Epoch seconds after which the signature carrying the nonce is refused as too old anyway. */
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.peerId, t.nonce] }), index('mesh_replay_expiry').on(t.expiresAt)],
);

/**
 * The cluster's identity files, sealed under the node key (gateway/cluster/identity.ts). Used on PostgreSQL, where
 * several nodes share one database; a SQLite gateway is one node and keeps them in its data dir only.
 */
export const clusterFiles = sqliteTable('cluster_files', {
  /** `tls/…`, `keys/…` or `kek/…`: the file's folder and its path inside it. */
  path: text('path').primaryKey(),
  /** IV, GCM tag and ciphertext; the path is the associated data. */
  sealed: blob('sealed', { mode: 'buffer' }).notNull(),
  /** HMAC-like digest keyed by the node key: tells a changed file without opening the stored one. */
  digest: text('digest').notNull(),
  updatedAt: text('updated_at').notNull(),
});

/** The nodes of a PostgreSQL cluster and when each last said it was alive (gateway/cluster/nodes.ts). */
export const clusterNodes = sqliteTable('cluster_nodes', {
  nodeId: text('node_id').primaryKey(),
  /** How the other nodes reach this one (`nodes.url`). */
  url: text('url').notNull(),
  /** Epoch milliseconds of the last heartbeat. */
  heartbeatAt: integer('heartbeat_at').notNull(),
});
