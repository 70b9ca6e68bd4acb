/**
 * Tables of the native realm: users (local and mesh-brokered), refresh tokens, ended sessions, PATs, the login
 * throttle's counters.
 */
import { index, integer, real, sqliteTable, text } from '../../gateway/db/drizzle.ts';

export const users = sqliteTable('users', {
  id: text('id').primaryKey(),
  username: text('username').notNull().unique(),
  email: text('email'),
  /** scrypt$N$r$p$salt$hash; null for brokered users, who never log in here. */
  passwordHash: text('password_hash'),
  roles: text('roles', { mode: 'json' }).$type<string[]>().notNull(),
  attributes: text('attributes', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  source: text('source', { enum: ['local', 'mesh'] })
    .notNull()
    .default('local'),
  /** Mesh-brokered users: `<source_user>@<source_cluster>`. */
  externalId: text('external_id').unique(),
  disabled: integer('disabled', { mode: 'boolean' }).notNull().default(false),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
});

export const refreshTokens = sqliteTable(
  'refresh_tokens',
  {
    /** sha256 of the opaque token; the token itself is never stored. */
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    expiresAt: text('expires_at').notNull(),
    revoked: integer('revoked', { mode: 'boolean' }).notNull().default(false),
    createdAt: text('created_at').notNull(),
    /**
     * The login session the token descends from: every rotation keeps it, and the access
     * tokens issued with it carry it as `sid`. Null only on rows written before sessions.
     */
    familyId: text('family_id'),
  },
  (t) => [index('refresh_tokens_user').on(t.userId), index('refresh_tokens_family').on(t.familyId)],
);

/**
 * Ended sessions, kept for good: a refresh token of a family listed here is refused whatever its own
 * row says, so no rotation racing the revocation can bring the session back.
 */
export const revokedFamilies = sqliteTable('revoked_families', {
  familyId: text('family_id').primaryKey(),
  revokedAt: text('revoked_at').notNull(),
});

/** Sessions whose access tokens are refused before they expire (logout, refresh-token reuse). */
export const revokedSessions = sqliteTable('revoked_sessions', {
  sid: text('sid').primaryKey(),
  /** Epoch seconds after which no access token of the session can still be valid; the row is then dropped. */
  expiresAt: integer('expires_at').notNull(),
});

export const pats = sqliteTable(
  'pats',
  {
    jti: text('jti').primaryKey(),
    ownerId: text('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name'),
    scope: text('scope'),
    aud: text('aud'),
    exp: integer('exp').notNull(),
    /** sha256 of the issued token; the token is shown once and never stored. */
    tokenHash: text('token_hash').notNull(),
    tenantId: text('tenant_id'),
    revoked: integer('revoked', { mode: 'boolean' }).notNull().default(false),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('pats_owner').on(t.ownerId)],
);

/** The realm's declared attribute vocabulary (docs/attributes.md). */
export const attributeSchema = sqliteTable('attribute_schema', {
  name: text('name').primaryKey(),
  type: text('type', { enum: ['string', 'int', 'bool', 'string[]'] }).notNull(),
  state: text('state', { enum: ['declared', 'deprecated', 'withdrawn'] }).notNull(),
  authority: text('authority', { enum: ['local_admin', 'self', 'mesh_peer', 'system'] }).notNull(),
  /** A sensitive attribute is stored on subjects but never issued as a token claim. */
  sensitive: integer('sensitive', { mode: 'boolean' }).notNull(),
  schemaVersion: text('schema_version').notNull(),
  declaredAt: text('declared_at').notNull(),
  deprecatedAt: text('deprecated_at'),
  withdrawnAt: text('withdrawn_at'),
  declaredBy: text('declared_by'),
});

/**
 * The login throttle's state, shared by every process and node (throttle-ledger.ts): a failure bucket per client
 * address (`c <client>`), per username (`a <name>`) and per locked username's clean clients (`l <name>`), and the
 * (client, username) pairs that signed in (`k <client> <name>`, `atMs` = when).
 */
export const loginThrottle = sqliteTable('login_throttle', {
  key: text('key').primaryKey(),
  /** Tokens left at `atMs` (a bucket refills from there as time passes). */
  tokens: real('tokens').notNull(),
  /** Epoch milliseconds of the last failure (or sign-in, for a known pair). */
  atMs: integer('at_ms').notNull(),
  /** The bucket's level just before its last failure: whether that failure emptied it. */
  levelBefore: real('level_before').notNull(),
});
