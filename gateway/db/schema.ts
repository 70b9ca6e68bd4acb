/** The kernel's own tables: the change feed every process tails, and the mesh replay cache every process shares. */
import { index, integer, primaryKey, sqliteTable, text } from './drizzle.ts';

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
