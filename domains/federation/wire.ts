/** Wire shapes of federation records and allowlist entries. The PSK never appears. */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { RemoteIp } from './schema.ts';
import type { AllowlistRow, FederationRow } from './store.ts';

/** SHA-256 of the whitespace-stripped PEM (the fingerprint form the upstream platform shows). */
export function caFingerprint(pem: string | null): string | null {
  return pem ? createHash('sha256').update(pem.replace(/\s+/g, '')).digest('hex') : null;
}

const nullableText = z.string().nullable();

/** A federation record as answered (the PSK never; the peer's CA as its fingerprint); the view is typed by it. */
export const recordAnswer = z.object({
  id: z.string(),
  role: z.enum(['initiator', 'receiver']),
  remote_cluster_name: z.string(),
  remote_ips: z.array(z.object({ ip: z.string(), hostname: nullableText, primary: z.boolean() })),
  callback_hostname: nullableText,
  local_cluster_id: z.string(),
  remote_cluster_id: nullableText,
  remote_federation_id: nullableText,
  status: z.enum(['WAITING', 'PAIRING', 'PAIRED', 'DISCONNECTED', 'DELETED']),
  status_reason: nullableText.describe(
    'why the record left PAIRED: operator_disconnect, operator_forced, peer_disconnect, peer_deleted, ' +
      'peer_not_paired (a reconciliation ping: the peer no longer holds the pairing), deleted, ' +
      'declared_duplicate (a second live record of one declared peer, taken out of the set by a migration)',
  ),
  declared_as: nullableText.describe('the peer name in the declared set that manages this record; null = by hand'),
  last_activity: nullableText,
  last_ping: nullableText,
  created_at: z.string(),
  created_by: nullableText,
  updated_at: z.string(),
  peer_kc_issuer_url: nullableText,
  peer_kc_jwks_url: nullableText,
  peer_broker_client_id: nullableText,
  peer_broker_client_secret_urn: nullableText,
  brokering_enabled: z.boolean(),
  shared_issuer_url: nullableText,
  shared_jwks_url: nullableText,
  shared_ca_pem: nullableText,
  require_peer_jwt: z.boolean().nullable(),
  identity_mode: z.enum(['shared_idp', 'peer_kc']).nullable(),
  trust_posture: z.enum(['receiver_controlled_shared', 'source_trusted']).nullable(),
  grandfathered: z.boolean(),
  mesh_features: z.array(z.string()),
  peer_ca_fingerprint: nullableText.describe('SHA-256 of the peer CA PEM, whitespace stripped, hex'),
});

export function recordView(row: FederationRow): z.output<typeof recordAnswer> {
  return {
    id: row.id,
    role: row.role,
    remote_cluster_name: row.remoteClusterName,
    remote_ips: row.remoteIps,
    callback_hostname: row.callbackHostname,
    local_cluster_id: row.localClusterId,
    remote_cluster_id: row.remoteClusterId,
    remote_federation_id: row.remoteFederationId,
    status: row.status,
    status_reason: row.statusReason,
    declared_as: row.declaredAs,
    last_activity: row.lastActivity,
    last_ping: row.lastPing,
    created_at: row.createdAt,
    created_by: row.createdBy,
    updated_at: row.updatedAt,
    peer_kc_issuer_url: row.peerKcIssuerUrl,
    peer_kc_jwks_url: row.peerKcJwksUrl,
    peer_broker_client_id: row.peerBrokerClientId,
    peer_broker_client_secret_urn: row.peerBrokerClientSecretUrn,
    brokering_enabled: row.brokeringEnabled,
    shared_issuer_url: row.sharedIssuerUrl,
    shared_jwks_url: row.sharedJwksUrl,
    shared_ca_pem: row.sharedCaPem,
    require_peer_jwt: row.requirePeerJwt,
    identity_mode: row.identityMode,
    trust_posture: row.trustPosture,
    grandfathered: row.grandfathered,
    mesh_features: row.meshFeatures,
    peer_ca_fingerprint: caFingerprint(row.remoteCaPem),
  };
}

export type FederationRecordView = z.output<typeof recordAnswer>;

/** A record as the list and get answer it: also whether another PAIRED record carries the same name. */
export const listedAnswer = recordAnswer.extend({
  name_collision: z
    .boolean()
    .describe('PAIRED, and another PAIRED record has the same remote_cluster_name: select it by id, not by name'),
});

/** A disconnect or delete: whether the peer was told (a delete tells it best effort). */
export const endedAnswer = z.object({
  federation_id: z.string(),
  status: z.enum(['DISCONNECTED', 'DELETED']),
  peer_acknowledged: z.boolean(),
  message: z.string(),
});

/** A ping that came back: the signed peer path works end to end (any failure is a refusal with its layer). */
export const pingAnswer = z.object({
  federation_id: z.string(),
  reachable: z.literal(true),
  remote_cluster_id: nullableText,
  last_ping: z.string(),
});

/** An allowlist entry: a remote user admitted through the federation, and the local user it maps to. */
export const entryAnswer = z.object({
  federation_id: z.string(),
  external_id: z.string(),
  initial_tuples: z.array(z.object({ subject: z.string(), relation: z.string(), object: z.string() })),
  auto_provisioned: z.boolean(),
  local_user_id: nullableText,
  created_at: z.string(),
  updated_at: z.string(),
  disabled_at: nullableText,
});

export function entryView(row: AllowlistRow): z.output<typeof entryAnswer> {
  return {
    federation_id: row.federationId,
    external_id: row.externalId,
    initial_tuples: row.initialTuples,
    auto_provisioned: row.autoProvisioned,
    local_user_id: row.localUserId,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    disabled_at: row.disabledAt,
  };
}

/** The route pair and peer calls use: the primary entry, else the first. */
export function primaryRoute(row: FederationRow): RemoteIp | null {
  return row.remoteIps.find((r) => r.primary) ?? row.remoteIps[0] ?? null;
}
