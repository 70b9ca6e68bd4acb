/**
 * Tables of the federation domain: the cluster's own
 * identity, federation records (PSK encrypted at rest), the receiver's
 * brokered-user allowlist, and the once-only cache of peer-call signatures.
 */
import { index, integer, primaryKey, sql, sqliteTable, text, uniqueIndex } from '../../gateway/db/drizzle.ts';

export interface RemoteIp {
  ip: string;
  hostname: string | null;
  primary: boolean;
}

export interface RecipeTuple {
  subject: string;
  relation: string;
  object: string;
}

/** One row: this cluster's UUID, minted at first start and advertised to peers. */
export const clusterIdentity = sqliteTable('cluster_identity', {
  id: integer('id').primaryKey(),
  clusterId: text('cluster_id').notNull(),
  /**
   * The name advertised when `clusterName` is left on its default, chosen with the id at first start
   * (`meshgate-` and the id's first 12 hex digits); null on a cluster first started before names were derived.
   */
  defaultName: text('default_name'),
  createdAt: text('created_at').notNull(),
});

export const federations = sqliteTable(
  'federations',
  {
    id: text('id').primaryKey(),
    role: text('role', { enum: ['initiator', 'receiver'] }).notNull(),
    remoteClusterName: text('remote_cluster_name').notNull(),
    remoteIps: text('remote_ips', { mode: 'json' }).$type<RemoteIp[]>().notNull(),
    callbackHostname: text('callback_hostname'),
    localClusterId: text('local_cluster_id').notNull(),
    remoteClusterId: text('remote_cluster_id'),
    /** The peer's own id for this pairing, from the signed handshake; mesh requests name the record by it. */
    remoteFederationId: text('remote_federation_id'),
    status: text('status', { enum: ['WAITING', 'PAIRING', 'PAIRED', 'DISCONNECTED', 'DELETED'] }).notNull(),
    /**
     * Why the record left PAIRED (operator, peer, reconciliation); null while it never did. `declared_duplicate`: the
     * declared-set migration took it out of the set, ended if it was not PAIRED (data/migrations 0027).
     */
    statusReason: text('status_reason'),
    /** The peer's name in the declared set (`meshgate federation apply`) that manages this record; null = by hand. */
    declaredAs: text('declared_as'),
    lastActivity: text('last_activity'),
    lastPing: text('last_ping'),
    createdAt: text('created_at').notNull(),
    createdBy: text('created_by'),
    updatedAt: text('updated_at').notNull(),
    /** AES-256-GCM ciphertext (psk-vault.ts); null once the record is deleted. */
    pskEnc: text('psk_enc'),
    /**
     * The lookup digest of the PSK's key id (psk-key-id.ts): an HMAC under a key of the PSK vault (psk-vault.ts), so
     * a reader of the database cannot test PSK guesses against it. An initiator names the key id in /remote/pair and
     * the receiver checks the one record whose digest it gives. Set on WAITING receiver records only (the store clears
     * it when the record leaves WAITING); on one made before key ids, filled in when the owning process starts.
     */
    pskKeyId: text('psk_key_id'),
    /** The peer's platform CA, received only inside the PSK-signed handshake. */
    remoteCaPem: text('remote_ca_pem'),
    peerKcIssuerUrl: text('peer_kc_issuer_url'),
    peerKcJwksUrl: text('peer_kc_jwks_url'),
    peerBrokerClientId: text('peer_broker_client_id'),
    peerBrokerClientSecretUrn: text('peer_broker_client_secret_urn'),
    /** This cluster's own realm for peer_kc brokering, sent to the peer at pairing. */
    localKc: text('local_kc', { mode: 'json' }).$type<{
      issuer_url: string;
      jwks_url: string;
      client_id: string;
      client_secret_urn: string;
    } | null>(),
    brokeringEnabled: integer('brokering_enabled', { mode: 'boolean' }).notNull(),
    sharedIssuerUrl: text('shared_issuer_url'),
    sharedJwksUrl: text('shared_jwks_url'),
    sharedCaPem: text('shared_ca_pem'),
    requirePeerJwt: integer('require_peer_jwt', { mode: 'boolean' }),
    identityMode: text('identity_mode', { enum: ['shared_idp', 'peer_kc'] }),
    trustPosture: text('trust_posture', { enum: ['receiver_controlled_shared', 'source_trusted'] }),
    grandfathered: integer('grandfathered', { mode: 'boolean' }).notNull(),
    /** Mesh hardening both sides announced at pairing (gateway/mesh/features.ts); [] = base envelope only. */
    meshFeatures: text('mesh_features', { mode: 'json' }).$type<string[]>().notNull().default([]),
  },
  (t) => [
    index('federations_status').on(t.status),
    index('federations_remote_cluster').on(t.remoteClusterId),
    index('federations_psk_key_id').on(t.pskKeyId),
    /**
     * A declared peer owns at most one live record, whatever applies run at once: the database refuses the second
     * (store.ts maps it to 409 federation_declared_exists). Disconnected and deleted ones may share the name: a
     * replaced record stays beside its successor. Raw text, quoted for both engines (the PostgreSQL mirror reuses it).
     */
    uniqueIndex('federations_declared_live')
      .on(t.declaredAs)
      .where(sql.raw(`"declared_as" IS NOT NULL AND "status" IN ('WAITING', 'PAIRING', 'PAIRED')`)),
  ],
);

export const federationUsers = sqliteTable(
  'federation_users',
  {
    federationId: text('federation_id')
      .notNull()
      .references(() => federations.id),
    externalId: text('external_id').notNull(),
    initialTuples: text('initial_tuples', { mode: 'json' }).$type<RecipeTuple[]>().notNull(),
    autoProvisioned: integer('auto_provisioned', { mode: 'boolean' }).notNull(),
    localUserId: text('local_user_id'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    disabledAt: text('disabled_at'),
  },
  (t) => [primaryKey({ columns: [t.federationId, t.externalId] })],
);

/** Signatures of accepted peer-protocol calls, kept for the signature window: each is accepted once. */
export const peerNonces = sqliteTable(
  'peer_nonces',
  {
    signature: text('signature').primaryKey(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('peer_nonces_expiry').on(t.expiresAt)],
);
