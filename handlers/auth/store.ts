/** Drizzle queries of the native realm behind a narrow interface (OpenFGA-style store). */
import { and, asc, eq, sql } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { attributeSchema, pats, refreshTokens, users } from './schema.ts';

export type UserRow = typeof users.$inferSelect;
export type NewUser = typeof users.$inferInsert;
export type PatRow = typeof pats.$inferSelect;
export type RefreshRow = typeof refreshTokens.$inferSelect;
export type AttributeSchemaRow = typeof attributeSchema.$inferSelect;

export interface AuthStore {
  countUsers(): number;
  userById(id: string): UserRow | undefined;
  userByUsername(username: string): UserRow | undefined;
  userByExternalId(externalId: string): UserRow | undefined;
  listUsers(): UserRow[];
  insertUser(row: NewUser): void;
  updateUser(id: string, patch: Partial<Omit<NewUser, 'id' | 'createdAt'>>): void;
  deleteUser(id: string): void;
  insertRefresh(row: typeof refreshTokens.$inferInsert): void;
  refreshByHash(hash: string): RefreshRow | undefined;
  revokeRefresh(hash: string): void;
  revokeUserRefresh(userId: string): number;
  insertPat(row: typeof pats.$inferInsert): void;
  patByJti(jti: string): PatRow | undefined;
  listPats(ownerId: string): PatRow[];
  revokePat(jti: string, at: string): void;
  attributeSchema(name: string): AttributeSchemaRow | undefined;
  listAttributeSchema(): AttributeSchemaRow[];
  putAttributeSchema(row: AttributeSchemaRow): void;
}

export function createAuthStore(db: Db): AuthStore {
  return {
    countUsers: () => db.select({ n: sql<number>`count(*)` }).from(users).get()?.n ?? 0,
    userById: (id) => db.select().from(users).where(eq(users.id, id)).get(),
    userByUsername: (username) => db.select().from(users).where(eq(users.username, username)).get(),
    userByExternalId: (externalId) => db.select().from(users).where(eq(users.externalId, externalId)).get(),
    listUsers: () => db.select().from(users).orderBy(asc(users.username)).all(),
    insertUser: (row) => void db.insert(users).values(row).run(),
    updateUser: (id, patch) => void db.update(users).set(patch).where(eq(users.id, id)).run(),
    deleteUser: (id) => void db.delete(users).where(eq(users.id, id)).run(),
    insertRefresh: (row) => void db.insert(refreshTokens).values(row).run(),
    refreshByHash: (hash) => db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, hash)).get(),
    revokeRefresh: (hash) => void db.update(refreshTokens).set({ revoked: true }).where(eq(refreshTokens.tokenHash, hash)).run(),
    revokeUserRefresh: (userId) =>
      db
        .update(refreshTokens)
        .set({ revoked: true })
        .where(and(eq(refreshTokens.userId, userId), eq(refreshTokens.revoked, false)))
        .run().changes,
    insertPat: (row) => void db.insert(pats).values(row).run(),
    patByJti: (jti) => db.select().from(pats).where(eq(pats.jti, jti)).get(),
    listPats: (ownerId) => db.select().from(pats).where(eq(pats.ownerId, ownerId)).orderBy(asc(pats.createdAt)).all(),
    revokePat: (jti, at) => void db.update(pats).set({ revoked: true, updatedAt: at }).where(eq(pats.jti, jti)).run(),
    attributeSchema: (name) => db.select().from(attributeSchema).where(eq(attributeSchema.name, name)).get(),
    listAttributeSchema: () => db.select().from(attributeSchema).orderBy(asc(attributeSchema.name)).all(),
    putAttributeSchema: (row) => void db.insert(attributeSchema).values(row).onConflictDoUpdate({ target: attributeSchema.name, set: row }).run(),
  };
}
