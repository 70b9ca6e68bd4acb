/**
 * Selector resolution among PAIRED records only, in precedence order: exact federation UUID, exact remote
 * cluster UUID, exact remote_cluster_name, unique name prefix. UUIDs compare
 * case-insensitively; names as given.
 */
import type { MeshPeer } from '../../gateway/mesh/directory.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';

export interface LocalIdentity {
  id: string;
  name: string;
}

export function resolveSelector(selector: string, paired: readonly MeshPeer[], local: LocalIdentity): MeshPeer {
  const lower = selector.toLowerCase();
  if (selector === '' || lower === local.id.toLowerCase()) throw MeshErrors.make.mesh_target_is_local({ selector });
  const tiers: ((peer: MeshPeer) => boolean)[] = [
    (p) => p.id.toLowerCase() === lower,
    (p) => p.remoteClusterId.toLowerCase() === lower,
    (p) => p.remoteClusterName === selector,
    (p) => p.remoteClusterName.startsWith(selector),
  ];
  for (const matches of tiers) {
    const hits = paired.filter(matches);
    if (hits.length === 1) return hits[0] as MeshPeer;
    if (hits.length > 1) throw MeshErrors.make.mesh_target_ambiguous({ selector, matches: hits.length });
  }
  // Our own name matches no peer: the caller meant this cluster.
  if (selector === local.name) throw MeshErrors.make.mesh_target_is_local({ selector });
  throw MeshErrors.make.mesh_target_not_found({ selector });
}
