/** Tables of the native realm: users (local and mesh-brokered), refresh tokens, PATs. */
import { index, integer, sqliteTable, text } from '../../gateway/db/drizzle.ts';

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
  },
  (t) => [index('refresh_tokens_user').on(t.userId)],
);

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
