/** Drizzle queries of the federation domain behind narrow interfaces. */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, inArray, lt } from '../../gateway/db/drizzle.ts';
import type { Db } from '../../gateway/db/open.ts';
import { clusterIdentity, federations, federationUsers, peerNonces } from './schema.ts';

export type FederationRow = typeof federations.$inferSelect;
export type FederationStatus = FederationRow['status'];
export type AllowlistRow = typeof federationUsers.$inferSelect;

export interface FederationStore {
  insert(row: FederationRow): void;
  get(id: string): FederationRow | undefined;
  list(filter: { status?: FederationStatus | undefined; skip: number; limit: number }): FederationRow[];
  byStatus(statuses: readonly FederationStatus[]): FederationRow[];
  byRemoteClusterId(remoteClusterId: string, statuses: readonly FederationStatus[]): FederationRow[];
  update(id: string, patch: Partial<Omit<FederationRow, 'id'>>): FederationRow;
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

/** `onWrite` runs after every insert and update (the mesh read cache, memo.ts). */
export function createFederationStore(db: Db, onWrite: () => void): FederationStore {
  return {
    insert(row) {
      db.insert(federations).values(row).run();
      onWrite();
    },
    get: (id) => db.select().from(federations).where(eq(federations.id, id)).get(),
    list: ({ status, skip, limit }) =>
      db
        .select()
        .from(federations)
        .where(status ? eq(federations.status, status) : undefined)
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
      const row = db.update(federations).set(patch).where(eq(federations.id, id)).returning().get();
      onWrite();
      if (!row) throw new Error(`federation ${id} vanished during update`);
      return row;
    },
  };
}

export function createAllowlistStore(db: Db, onWrite: () => void): AllowlistStore {
  const key = (federationId: string, externalId: string) =>
    and(eq(federationUsers.federationId, federationId), eq(federationUsers.externalId, externalId));
  return {
    insert(row) {
      db.insert(federationUsers).values(row).run();
      onWrite();
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
      onWrite();
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

/** This cluster's UUID: minted once, stable across restarts (peers pin it as remote_cluster_id). */
export function loadClusterId(db: Db, now: () => Date): string {
  const row = db.select().from(clusterIdentity).where(eq(clusterIdentity.id, 1)).get();
  if (row) return row.clusterId;
  const clusterId = randomUUID();
  db.insert(clusterIdentity).values({ id: 1, clusterId, createdAt: now().toISOString() }).onConflictDoNothing().run();
  return (db.select().from(clusterIdentity).where(eq(clusterIdentity.id, 1)).get() as { clusterId: string }).clusterId;
}
