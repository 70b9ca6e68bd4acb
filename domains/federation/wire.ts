/** Wire shapes of federation records and allowlist entries. The PSK never appears. */
import { createHash } from 'node:crypto';
import type { RemoteIp } from './schema.ts';
import type { AllowlistRow, FederationRow } from './store.ts';

/** SHA-256 of the whitespace-stripped PEM (the fingerprint form the upstream platform shows). */
export function caFingerprint(pem: string | null): string | null {
  return pem ? createHash('sha256').update(pem.replace(/\s+/g, '')).digest('hex') : null;
}

export function recordView(row: FederationRow) {
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

export type FederationRecordView = ReturnType<typeof recordView>;

export function entryView(row: AllowlistRow) {
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
