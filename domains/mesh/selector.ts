/**
 * Selector resolution among PAIRED records only, in precedence order: exact federation UUID, exact remote
 * cluster UUID, exact remote_cluster_name, unique name prefix. UUIDs compare
 * case-insensitively; names as given. Each tier is a lookup in an index built once per PAIRED set (indexPeers).
 */
import type { MeshPeer, PairedPeers } from '../../gateway/mesh/directory.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';

export interface LocalIdentity {
  id: string;
  name: string;
}

function group(peers: readonly MeshPeer[], keyOf: (peer: MeshPeer) => string): Map<string, MeshPeer[]> {
  const out = new Map<string, MeshPeer[]>();
  for (const peer of peers) {
    const key = keyOf(peer);
    const list = out.get(key);
    if (list) list.push(peer);
    else out.set(key, [peer]);
  }
  return out;
}

/** First index in the sorted `names` not below `prefix` (binary search). */
function lowerBound(names: readonly string[], prefix: string): number {
  let lo = 0;
  let hi = names.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((names[mid] as string) < prefix) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function indexPeers(peers: readonly MeshPeer[]): PairedPeers {
  const ids = new Map(peers.map((p) => [p.id.toLowerCase(), p]));
  const clusters = group(peers, (p) => p.remoteClusterId.toLowerCase());
  const names = group(peers, (p) => p.remoteClusterName);
  const sorted = [...names.keys()].sort();
  return {
    byId: (id) => ids.get(id),
    byClusterId: (clusterId) => clusters.get(clusterId) ?? [],
    byName: (name) => names.get(name) ?? [],
    byNamePrefix(prefix, limit) {
      const out: MeshPeer[] = [];
      for (let i = lowerBound(sorted, prefix); i < sorted.length && out.length < limit; i++) {
        const name = sorted[i] as string;
        if (!name.startsWith(prefix)) break;
        out.push(...(names.get(name) ?? []).slice(0, limit - out.length));
      }
      return out;
    },
  };
}

export function resolveSelector(selector: string, paired: PairedPeers, local: LocalIdentity): MeshPeer {
  const lower = selector.toLowerCase();
  if (selector === '' || lower === local.id.toLowerCase()) throw MeshErrors.make.mesh_target_is_local({ selector });
  const byId = paired.byId(lower);
  const tiers: (() => readonly MeshPeer[])[] = [
    () => (byId ? [byId] : []),
    () => paired.byClusterId(lower),
    () => paired.byName(selector),
    () => paired.byNamePrefix(selector, 2),
  ];
  for (const tier of tiers) {
    const hits = tier();
    if (hits.length === 1) return hits[0] as MeshPeer;
    if (hits.length > 1) throw MeshErrors.make.mesh_target_ambiguous({ selector, matches: hits.length });
  }
  // Our own name matches no peer: the caller meant this cluster.
  if (selector === local.name) throw MeshErrors.make.mesh_target_is_local({ selector });
  throw MeshErrors.make.mesh_target_not_found({ selector });
}
