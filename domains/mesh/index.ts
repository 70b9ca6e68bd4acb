/**
 * The mesh proxy's domain side: adapts the federation records,
 * the allowlist, the user directory and ReBAC into the MESH_DIRECTORY the
 * gateway's egress route and meshVerify stage use, provides the egress
 * core (MESH_EGRESS) to other domains, and mounts egress.
 */
import {
  MESH_DIRECTORY,
  type MeshDirectory,
  type MeshFeature,
  type MeshPeer,
  type PairedPeers,
} from '../../gateway/mesh/directory.ts';
import type { HandlerModule } from '../../gateway/module.ts';
import { AUTHENTICATOR } from '../../gateway/principal.ts';
import { USER_DIRECTORY } from '../auth/index.ts';
import { AUTHZ } from '../authz/index.ts';
import { FEDERATIONS, type FederationDirectory, type FederationRecordView } from '../federation/index.ts';
import { Admission } from './admission.ts';
import { createMeshEgress, createMeshEgressRoute, MESH_EGRESS } from './egress.ts';
import { createEgressAuthenticator } from './egress-auth.ts';
import { IdentityResolver } from './identity.ts';
import { RealmVerifier } from './jwks.ts';
import { indexPeers } from './selector.ts';

export { MESH_EGRESS, type MeshAnswer, type MeshEgress } from './egress.ts';

type PeerRecord = MeshPeer & { readonly record: FederationRecordView };

/** One peer object per record view (views are replaced, never changed, when their record is). */
const peers = new WeakMap<FederationRecordView, PeerRecord>();

function toPeer(record: FederationRecordView): PeerRecord {
  let peer = peers.get(record);
  if (!peer) {
    peer = peerOf(record);
    peers.set(record, peer);
  }
  return peer;
}

function peerOf(record: FederationRecordView): PeerRecord {
  return {
    id: record.id,
    remoteClusterId: record.remote_cluster_id ?? '',
    remoteClusterName: record.remote_cluster_name,
    remoteFederationId: record.remote_federation_id,
    status: record.status,
    features: (record.mesh_features ?? []) as MeshFeature[],
    record,
  };
}

/** last_activity is written at most once a minute per record, not once per request. */
function activityToucher(federations: FederationDirectory, now: () => Date) {
  const last = new Map<string, number>();
  return (id: string) => {
    const at = now().getTime();
    if (at - (last.get(id) ?? 0) < 60_000) return;
    last.set(id, at);
    federations.touch(id);
  };
}

export const meshModule: HandlerModule = {
  name: 'mesh',
  init(deps) {
    const federations = deps.services.get(FEDERATIONS);
    const verifier = new RealmVerifier();
    const identity = new IdentityResolver(federations, verifier);
    const admission = new Admission(federations, deps.services.get(USER_DIRECTORY), deps.services.get(AUTHZ));
    const touch = activityToucher(federations, deps.now);
    // The selector index follows the PAIRED array, which the federation domain replaces only when that set changes.
    let indexed: { records: readonly FederationRecordView[]; peers: PairedPeers } | null = null;
    const paired = () => {
      const records = federations.paired();
      if (indexed?.records !== records) indexed = { records, peers: indexPeers(records.map(toPeer)) };
      return indexed.peers;
    };
    const directory: MeshDirectory = {
      localClusterId: () => federations.localClusterId,
      localClusterName: () => federations.localClusterName,
      paired,
      bySourceCluster: (clusterId) => federations.byRemoteClusterId(clusterId).map(toPeer),
      byFederationId(federationId) {
        const record = federations.byId(federationId);
        return record ? toPeer(record) : undefined;
      },
      key: (peer) => federations.psk(peer.id),
      agent: (peer) => federations.peerAgent(peer.id),
      async admit(peer, envelope) {
        const record = (peer as PeerRecord).record;
        const caller = await identity.establish(record, envelope);
        const principal = await admission.admit(record, envelope.sourceClusterId, caller);
        touch(peer.id);
        return principal;
      },
      egressAuthenticator: createEgressAuthenticator(deps.services.get(AUTHENTICATOR), federations, identity),
    };
    deps.services.provide(MESH_DIRECTORY, directory);
    const egress = createMeshEgress({
      directory,
      config: deps.config,
      metrics: deps.metrics,
      tracing: deps.tracing,
      now: deps.now,
    });
    deps.services.provide(MESH_EGRESS, egress);
    return { routes: [createMeshEgressRoute(egress)], close: () => verifier.close() };
  },
};
