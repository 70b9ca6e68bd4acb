/**
 * Cluster-wide views the platform SDK reads: capabilities (any
 * authenticated caller, mesh-brokered ones included, so a peer can probe
 * us) and diagnose (native administrators). Listed after the domains whose
 * services it reads.
 */

import { principalOf } from '../../gateway/http/context.ts';
import type { HandlerModule } from '../../gateway/module.ts';
import { SIGNING_KEYS } from '../auth/index.ts';
import { FEDERATIONS } from '../federation/index.ts';
import { DEPLOYMENT_COUNT } from '../serving/index.ts';
import { capabilities, capabilitiesAnswer } from './capabilities.ts';
import { diagnose, diagnoseAnswer } from './diagnose.ts';

export const clusterModule: HandlerModule = {
  name: 'cluster',
  init(deps) {
    const federations = deps.services.get(FEDERATIONS);
    const capabilitySources = {
      federations,
      jobRuntime: deps.config.jobs.runtime,
      visibleDeployments: deps.services.find(DEPLOYMENT_COUNT) ?? null,
    };
    const diagnoseSources = {
      clusterId: federations.localClusterId,
      runtime: deps.runtime,
      signingKeys: deps.services.get(SIGNING_KEYS),
      now: deps.now,
    };
    return {
      routes: [
        {
          method: 'GET',
          path: '/cluster/cluster_capabilities',
          auth: 'user',
          doc: {
            summary: "This cluster's capabilities (runtimes, GPUs, federations) as the SDK reads them",
            answers: { 200: capabilitiesAnswer },
          },
          handle: (ctx) => ({ status: 200, body: capabilities(capabilitySources, principalOf(ctx)) }),
        },
        {
          method: 'GET',
          path: '/cluster/diagnose',
          auth: 'admin',
          doc: {
            summary: 'Diagnostics of this cluster: identity, certificate expiry, signing keys',
            answers: { 200: diagnoseAnswer },
          },
          handle: () => ({ status: 200, body: diagnose(diagnoseSources) }),
        },
      ],
    };
  },
};
