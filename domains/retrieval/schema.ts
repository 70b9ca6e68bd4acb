/**
 * Retrieval jobs. A job keeps the request it was created
 * with, the dataset summary, the caller it belongs to (with the attributes
 * its gates evaluate, read from the token at creation) and
 * its progress. `credential_override` is never stored: it lives in memory
 * for the job's lifetime only.
 */
import { index, integer, sqliteTable, text } from '../../gateway/db/drizzle.ts';

export const retrievalJobs = sqliteTable(
  'retrieval_jobs',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    principal: text('principal', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    datasetUrn: text('dataset_urn').notNull(),
    dataset: text('dataset', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    transport: text('transport').notNull(),
    status: text('status').notNull(),
    request: text('request', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    rows: integer('rows').notNull().default(0),
    bytes: integer('bytes').notNull().default(0),
    chunks: integer('chunks').notNull().default(0),
    error: text('error'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('retrieval_jobs_owner').on(t.ownerId, t.createdAt), index('retrieval_jobs_created').on(t.createdAt)],
);

/**
 * Single-use stream tokens (Arrow Flight tickets) spent by any process or node, each kept until it expires, so a
 * ticket is spent once in the whole gateway or cluster, and across restarts.
 */
export const retrievalSpentTokens = sqliteTable(
  'retrieval_spent_tokens',
  {
    nonce: text('nonce').primaryKey(),
    /** Epoch seconds after which the token is refused as expired anyway. */
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('retrieval_spent_tokens_expiry').on(t.expiresAt)],
);
