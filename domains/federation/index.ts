/**
 * Federation: records, the pairing handshake with CA exchange,
 * the peer protocol, the brokered-user allowlist and diagnose. Provides
 * FEDERATIONS (for the mesh proxy and ingress) and looks up the optional
 * BROKERED_JOB_CANCELLER at revoke time.
 */
import type { HandlerModule } from '../../gateway/module.ts';
import { AUTHZ } from '../authz/index.ts';
import { AllowlistService } from './allowlist.ts';
import { allowlistRoutes } from './allowlist-routes.ts';
import { federationCommand } from './cli.ts';
import { type FederationContext, PeerAgents } from './context.ts';
import { createDirectory, FEDERATIONS } from './directory.ts';
import { FederationErrors } from './errors.ts';
import { ChangeCounter } from './memo.ts';
import { observeFederations } from './metrics.ts';
import { peerRoutes } from './peer-routes.ts';
import { PskVault } from './psk-vault.ts';
import { federationRoutes } from './routes.ts';
import { FederationService } from './service.ts';
import { createAllowlistStore, createFederationStore, createNonceStore, loadClusterId } from './store.ts';

export { BROKERED_JOB_CANCELLER, type BrokeredJobCanceller } from './allowlist.ts';
export { type AllowlistEntryView, FEDERATIONS, type FederationDirectory } from './directory.ts';
export { FederationErrors } from './errors.ts';
export type { FederationRecordView } from './wire.ts';

export const federationModule: HandlerModule = {
  name: 'federation',
  errors: FederationErrors,
  commands: [federationCommand],
  init(deps) {
    const agents = new PeerAgents(deps.config.federation.peerTimeoutMs);
    const changes = new ChangeCounter();
    const bump = () => changes.bump();
    // Records and allowlists changed by another process or `meshgate federation` drop the memoised lookups too.
    for (const topic of ['federations', 'federation_users']) {
      deps.feed.subscribe(topic, bump);
      deps.feed.onReset(topic, bump);
    }
    const records = createFederationStore(deps.db, bump);
    observeFederations(deps.metrics, records);
    const ctx: FederationContext = {
      records,
      allowlist: createAllowlistStore(deps.db, bump),
      changes,
      nonces: createNonceStore(deps.db),
      vault: PskVault.open(deps.config.dataDir),
      local: {
        id: loadClusterId(deps.db, deps.now),
        name: deps.config.clusterName,
        caPem: deps.runtime.caPem,
        origin: deps.runtime.origin,
        bind: deps.config.bind,
        hostnames: deps.config.hostnames,
      },
      policy: deps.config.federation,
      meshFeatures: deps.config.mesh.features,
      authz: deps.services.get(AUTHZ),
      services: deps.services,
      logger: deps.logger.child({ domain: 'federation' }),
      agents,
      now: deps.now,
    };
    deps.services.provide(FEDERATIONS, createDirectory(ctx));
    const max = deps.config.limits.maxBodyBytes;
    return {
      routes: [
        ...federationRoutes(ctx, new FederationService(ctx), max),
        ...allowlistRoutes(new AllowlistService(ctx), max),
        ...peerRoutes(ctx),
      ],
      close: () => agents.closeAll(),
    };
  },
};
