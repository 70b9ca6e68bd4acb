/** Drizzle queries of the federation domain behind narrow interfaces. */
import { randomUUID } from 'node:crypto';
import { and, asc, count, eq, inArray, isNotNull, isNull, lt, or, sql } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { FederationErrors } from './errors.ts';
import { clusterIdentity, federations, federationUsers, peerNonces } from './schema.ts';

export type FederationRow = typeof federations.$inferSelect;
export type FederationStatus = FederationRow['status'];
export type AllowlistRow = typeof federationUsers.$inferSelect;

export interface FederationStore {
  insert(row: FederationRow): void;
  get(id: string): FederationRow | undefined;
  list(filter: {
    status?: FederationStatus | undefined;
    q?: string | undefined;
    skip: number;
    limit: number;
  }): FederationRow[];
  byStatus(statuses: readonly FederationStatus[]): FederationRow[];
  byRemoteClusterId(remoteClusterId: string, statuses: readonly FederationStatus[]): FederationRow[];
  /** A patch that moves the record out of WAITING also clears its key id lookup (only WAITING ones are found by it). */
  update(id: string, patch: Partial<Omit<FederationRow, 'id'>>): FederationRow;
  /**
   * WAITING records whose PSK key id has this lookup digest (psk-vault.ts keyIdLookup), at most two: one is the
   * record, two an ambiguity.
   */
  waitingByKeyId(lookup: string): FederationRow[];
  /** WAITING records whose key id is not known yet (made before key ids, not filled in yet), at most `limit`. */
  waitingWithoutKeyId(limit: number): FederationRow[];
  countByStatus(status: FederationStatus): number;
  /** WAITING receiver records with a PSK but no key id lookup (made before key ids, or by an older gateway). */
  missingKeyId(): FederationRow[];
  /** Records a declared set manages (declared_as set), DELETED included. */
  declared(): FederationRow[];
  /** Removes DELETED records (and their allowlists) last updated before `before`; answers how many went. */
  purgeDeleted(before: string): number;
}

export interface AllowlistStore {
  insert(row: AllowlistRow): void;
  get(federationId: string, externalId: string): AllowlistRow | undefined;
  list(federationId: string): AllowlistRow[];
  update(
    federationId: string,
    externalId: string,
    patch: Partial<Omit<AllowlistRow, 'federationId' | 'externalId'>>,
  ): AllowlistRow;
}

export interface NonceStore {
  /** False when the signature was already accepted within its window (a replay). */
  acceptOnce(signature: string, expiresAt: number, nowSeconds: number): boolean;
}

/** Name or id containing `text`, case-insensitive on both engines (LIKE with its wildcards escaped). */
function containing(text: string) {
  const pattern = `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return or(
    sql`lower(${federations.remoteClusterName}) LIKE ${pattern} ESCAPE '\\'`,
    sql`${federations.id} LIKE ${pattern} ESCAPE '\\'`,
  );
}

/** Columns no cache reads: a write of only these is not a change (record-cache.ts). */
const ACTIVITY = new Set(['lastActivity', 'lastPing']);

/**
 * Whether `error` is the database refusing a second live record for one declared peer (the unique index
 * federations_declared_live): SQLite names the indexed column, PostgreSQL the index (SQLSTATE 23505, unique_violation,
 * https://www.postgresql.org/docs/current/errcodes-appendix.html). The driver's error may be wrapped (`cause`).
 */
function isDeclaredConflict(error: unknown): boolean {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined; e; e = e.cause as never) {
    const message = typeof e.message === 'string' ? e.message : '';
    if (e.code === 'SQLITE_CONSTRAINT_UNIQUE' && message.includes('federations.declared_as')) return true;
    if (e.code === '23505' && message.includes('federations_declared_live')) return true;
  }
  return false;
}

/**
 * A failed write without its parameters: drizzle's error (DrizzleQueryError) says `params:` in its message and keeps
 * them, and a record's are its sealed PSK and key id lookup, which no log line may carry. The query text (placeholders
 * only) stays, and so does the driver's error as `cause` with its code, so a caller still classifies it. (drizzle
 * wraps the errors of its asynchronous drivers so; the synchronous one both engines use here throws the driver's
 * own, which carries no parameter, but nothing in its API promises that it stays so.)
 */
export function withoutParams(error: unknown): unknown {
  if (!(error instanceof Error) || !('params' in error)) return error;
  const query = (error as { query?: unknown }).query;
  const bare = new Error(`Failed query: ${typeof query === 'string' ? query : '(federations)'}`, {
    cause: error.cause,
  });
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  if (code !== undefined) Object.assign(bare, { code });
  return bare;
}

/** `onWrite(id)` runs after every insert and update but those of activity alone (the mesh read cache). */
export function createFederationStore(db: Db, onWrite: (id: string) => void): FederationStore {
  const waiting = eq(federations.status, 'WAITING');
  return {
    insert(row) {
      try {
        db.insert(federations).values(row).run();
      } catch (error) {
        if (row.declaredAs !== null && isDeclaredConflict(error))
          throw FederationErrors.make.federation_declared_exists({ declared_as: row.declaredAs }, withoutParams(error));
        throw withoutParams(error);
      }
      onWrite(row.id);
    },
    get: (id) => db.select().from(federations).where(eq(federations.id, id)).get(),
    list: ({ status, q, skip, limit }) =>
      db
        .select()
        .from(federations)
        .where(and(status ? eq(federations.status, status) : undefined, q ? containing(q) : undefined))
        .orderBy(asc(federations.createdAt), asc(federations.id))
        .limit(limit)
        .offset(skip)
        .all(),
    byStatus: (statuses) =>
      db
        .select()
        .from(federations)
        .where(inArray(federations.status, [...statuses]))
        .all(),
    byRemoteClusterId: (remoteClusterId, statuses) =>
      db
        .select()
        .from(federations)
        .where(and(eq(federations.remoteClusterId, remoteClusterId), inArray(federations.status, [...statuses])))
        .all(),
    update(id, patch) {
      const set = patch.status !== undefined && patch.status !== 'WAITING' ? { ...patch, pskKeyId: null } : patch;
      let row: FederationRow | undefined;
      try {
        row = db.update(federations).set(set).where(eq(federations.id, id)).returning().get();
      } catch (error) {
        throw withoutParams(error);
      }
      if (Object.keys(patch).some((k) => !ACTIVITY.has(k))) onWrite(id);
      if (!row) throw new Error(`federation ${id} vanished during update`);
      return row;
    },
    waitingByKeyId: (lookup) =>
      db
        .select()
        .from(federations)
        .where(and(waiting, eq(federations.pskKeyId, lookup)))
        .limit(2)
        .all(),
    waitingWithoutKeyId: (limit) =>
      db
        .select()
        .from(federations)
        .where(and(waiting, isNull(federations.pskKeyId)))
        .orderBy(asc(federations.createdAt), asc(federations.id))
        .limit(limit)
        .all(),
    countByStatus: (status) =>
      db.select({ n: count() }).from(federations).where(eq(federations.status, status)).get()?.n ?? 0,
    missingKeyId: () =>
      db
        .select()
        .from(federations)
        .where(
          and(waiting, eq(federations.role, 'receiver'), isNotNull(federations.pskEnc), isNull(federations.pskKeyId)),
        )
        .all(),
    declared: () => db.select().from(federations).where(isNotNull(federations.declaredAs)).all(),
    purgeDeleted(before) {
      const gone = and(eq(federations.status, 'DELETED'), lt(federations.updatedAt, before));
      return db.transaction(() => {
        const ids = db.select({ id: federations.id }).from(federations).where(gone).all();
        if (ids.length === 0) return 0;
        const list = ids.map((r) => r.id);
        db.delete(federationUsers).where(inArray(federationUsers.federationId, list)).run();
        db.delete(federations).where(inArray(federations.id, list)).run();
        return list.length;
      });
    },
  };
}

export function createAllowlistStore(
  db: Db,
  onWrite: (federationId: string, externalId: string) => void,
): AllowlistStore {
  const key = (federationId: string, externalId: string) =>
    and(eq(federationUsers.federationId, federationId), eq(federationUsers.externalId, externalId));
  return {
    insert(row) {
      db.insert(federationUsers).values(row).run();
      onWrite(row.federationId, row.externalId);
    },
    get: (federationId, externalId) => db.select().from(federationUsers).where(key(federationId, externalId)).get(),
    list: (federationId) =>
      db
        .select()
        .from(federationUsers)
        .where(eq(federationUsers.federationId, federationId))
        .orderBy(asc(federationUsers.createdAt))
        .all(),
    update(federationId, externalId, patch) {
      const row = db.update(federationUsers).set(patch).where(key(federationId, externalId)).returning().get();
      onWrite(federationId, externalId);
      if (!row) throw new Error(`allowlist entry ${externalId} vanished during update`);
      return row;
    },
  };
}

export function createNonceStore(db: Db): NonceStore {
  return {
    acceptOnce(signature, expiresAt, nowSeconds) {
      db.delete(peerNonces).where(lt(peerNonces.expiresAt, nowSeconds)).run();
      const inserted = db.insert(peerNonces).values({ signature, expiresAt }).onConflictDoNothing().returning().get();
      return inserted !== undefined;
    },
  };
}

/**
 * This cluster's UUID (minted once, stable across restarts: peers pin it as remote_cluster_id) and the name it
 * advertises when left on the default, chosen with it: null for a cluster first started before names were derived.
 */
export function loadClusterIdentity(db: Db, now: () => Date): { clusterId: string; defaultName: string | null } {
  const read = () => db.select().from(clusterIdentity).where(eq(clusterIdentity.id, 1)).get();
  const row = read();
  if (row) return row;
  const clusterId = randomUUID();
  // 48 bits of the id: at a fleet of 1,000 clusters, two sharing a name is about a one-in-half-a-billion chance.
  const defaultName = `meshgate-${clusterId.replaceAll('-', '').slice(0, 12)}`;
  db.insert(clusterIdentity)
    .values({ id: 1, clusterId, defaultName, createdAt: now().toISOString() })
    .onConflictDoNothing()
    .run();
  return read() as { clusterId: string; defaultName: string | null };
}
