/**
 * GET /api/cluster/cluster_capabilities: what this cluster is and can run,
 * in the shape the platform SDK's `ClusterCapabilities` reads (locally
 * through `cluster.capabilities()`, from a peer through
 * `federations[name].probe()` over the mesh). Nothing in it is a secret, but
 * it is still only for authenticated callers: the deployment count is of the
 * deployments the caller may see.
 */
import { readdirSync } from 'node:fs';
import { type as osType } from 'node:os';
import { z } from 'zod';
import type { Config } from '../../gateway/config/schema.ts';
import type { Principal } from '../../gateway/principal.ts';
import type { FederationDirectory } from '../federation/index.ts';

export interface CapabilitySources {
  federations: FederationDirectory;
  jobRuntime: Config['jobs']['runtime'];
  /** Deployments the caller may see; serving provides it (null when the serving domain is absent). */
  visibleDeployments: ((principal: Principal) => number) | null;
}

/** NVIDIA's kernel driver exposes one /dev/nvidiaN per GPU; without the driver there is nothing to schedule on. */
function gpuCount(): number {
  try {
    return readdirSync('/dev').filter((name) => /^nvidia\d+$/.test(name)).length;
  } catch {
    return 0;
  }
}

/** The SDK's `ClusterCapabilities`; the builder below is typed by it. */
export const capabilitiesAnswer = z.object({
  system_type: z.string(),
  os: z.string(),
  gpu_count: z.number().int(),
  available_platforms: z.array(z.string()),
  federation_count: z.number().int(),
  active_deployments: z.number().int(),
  ray_ready: z.boolean(),
  local_node_id: z.string(),
  cluster_id: z.string(),
  cluster_name: z.string(),
});

export function capabilities(sources: CapabilitySources, principal: Principal): z.output<typeof capabilitiesAnswer> {
  const { federations } = sources;
  return {
    // The OS family only: a kernel release would tell any user which exploits apply.
    system_type: process.platform,
    os: osType(),
    gpu_count: gpuCount(),
    available_platforms: [sources.jobRuntime],
    federation_count: federations.paired().length,
    active_deployments: sources.visibleDeployments?.(principal) ?? 0,
    // Ray is this cluster's job runtime; whether its head answers right now is for diagnose, not a capability probe.
    ray_ready: sources.jobRuntime === 'ray',
    local_node_id: federations.localClusterId,
    cluster_id: federations.localClusterId,
    cluster_name: federations.localClusterName,
  };
}
