/** Drizzle queries of the native realm behind a narrow interface (OpenFGA-style store). */
import { and, asc, eq, gt, inArray, lt, lte, notExists, or, sql } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { attributeSchema, pats, refreshTokens, revokedFamilies, revokedSessions, users } from './schema.ts';

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
  /** One transaction: the presented token is spent and its successor stored, with nothing in between. */
  rotateRefresh(spentHash: string, successor: typeof refreshTokens.$inferInsert): void;
  revokeUserRefresh(userId: string): number;
  /**
   * Revokes the families' refresh tokens and records the families as ended; forgets ended families revoked before
   * `forgetBeforeIso` that hold no refresh token unexpired at `atIso` (no token of theirs can be presented any more).
   */
  revokeFamilies(familyIds: readonly string[], atIso: string, forgetBeforeIso: string): void;
  /** How many ended families are remembered. */
  countRevokedFamilies(): number;
  familyRevoked(familyId: string): boolean;
  /**
   * Sessions of the user still able to refresh, or that issued a token after `sinceIso` (an access token may be live).
   */
  openFamilies(userId: string, sinceIso: string): string[];
  /** Records revoked sessions and drops the rows no token can outlive any more. */
  revokeSessions(sids: readonly string[], expiresAt: number, nowSeconds: number): void;
  /** Revoked sessions still in force at `nowSeconds`; older rows are deleted on the way. */
  liveRevokedSessions(nowSeconds: number): { sid: string; expiresAt: number }[];
  insertPat(row: typeof pats.$inferInsert): void;
  patByJti(jti: string): PatRow | undefined;
  listPats(ownerId: string): PatRow[];
  revokePat(jti: string, at: string): void;
  /** The latest `exp` of the PATs created before `createdBeforeSeconds` that are neither revoked nor expired. */
  latestLivePatExp(createdBeforeSeconds: number): number | null;
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
    rotateRefresh: (spentHash, successor) =>
      db.transaction((tx) => {
        tx.update(refreshTokens).set({ revoked: true }).where(eq(refreshTokens.tokenHash, spentHash)).run();
        tx.insert(refreshTokens).values(successor).run();
      }),
    revokeUserRefresh: (userId) =>
      db
        .update(refreshTokens)
        .set({ revoked: true })
        .where(and(eq(refreshTokens.userId, userId), eq(refreshTokens.revoked, false)))
        .run().changes,
    revokeFamilies: (familyIds, atIso, forgetBeforeIso) => {
      if (familyIds.length === 0) return;
      db.transaction((tx) => {
        tx.update(refreshTokens)
          .set({ revoked: true })
          .where(inArray(refreshTokens.familyId, [...familyIds]))
          .run();
        for (const familyId of familyIds)
          tx.insert(revokedFamilies).values({ familyId, revokedAt: atIso }).onConflictDoNothing().run();
        const live = tx
          .select({ one: sql`1` })
          .from(refreshTokens)
          .where(and(eq(refreshTokens.familyId, revokedFamilies.familyId), gt(refreshTokens.expiresAt, atIso)));
        tx.delete(revokedFamilies)
          .where(and(lt(revokedFamilies.revokedAt, forgetBeforeIso), notExists(live)))
          .run();
      });
    },
    countRevokedFamilies: () => db.select({ n: sql<number>`count(*)` }).from(revokedFamilies).get()?.n ?? 0,
    familyRevoked: (familyId) =>
      db.select().from(revokedFamilies).where(eq(revokedFamilies.familyId, familyId)).get() !== undefined,
    openFamilies: (userId, sinceIso) =>
      db
        .selectDistinct({ familyId: refreshTokens.familyId })
        .from(refreshTokens)
        .where(
          and(
            eq(refreshTokens.userId, userId),
            or(eq(refreshTokens.revoked, false), gt(refreshTokens.createdAt, sinceIso)),
          ),
        )
        .all()
        .flatMap((row) => (row.familyId ? [row.familyId] : [])),
    revokeSessions: (sids, expiresAt, nowSeconds) => {
      db.delete(revokedSessions).where(lte(revokedSessions.expiresAt, nowSeconds)).run();
      for (const sid of sids) {
        db.insert(revokedSessions)
          .values({ sid, expiresAt })
          .onConflictDoUpdate({ target: revokedSessions.sid, set: { expiresAt } })
          .run();
      }
    },
    liveRevokedSessions: (nowSeconds) => {
      db.delete(revokedSessions).where(lte(revokedSessions.expiresAt, nowSeconds)).run();
      return db.select().from(revokedSessions).all();
    },
    insertPat: (row) => void db.insert(pats).values(row).run(),
    patByJti: (jti) => db.select().from(pats).where(eq(pats.jti, jti)).get(),
    listPats: (ownerId) => db.select().from(pats).where(eq(pats.ownerId, ownerId)).orderBy(asc(pats.createdAt)).all(),
    revokePat: (jti, at) => void db.update(pats).set({ revoked: true, updatedAt: at }).where(eq(pats.jti, jti)).run(),
    latestLivePatExp: (before) =>
      db
        .select({ exp: sql<number | null>`max(${pats.exp})` })
        .from(pats)
        .where(and(eq(pats.revoked, false), lt(pats.createdAt, new Date((before + 1) * 1000).toISOString())))
        .get()?.exp ?? null,
    attributeSchema: (name) => db.select().from(attributeSchema).where(eq(attributeSchema.name, name)).get(),
    listAttributeSchema: () => db.select().from(attributeSchema).orderBy(asc(attributeSchema.name)).all(),
    putAttributeSchema: (row) =>
      void db.insert(attributeSchema).values(row).onConflictDoUpdate({ target: attributeSchema.name, set: row }).run(),
  };
}
