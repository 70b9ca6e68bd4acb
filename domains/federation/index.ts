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
import { type FederationContext, PeerAgents, pskOf } from './context.ts';
import { AllowlistCache, createDirectory, FEDERATIONS } from './directory.ts';
import { FederationErrors } from './errors.ts';
import { observeFederations, pairCheckCounter } from './metrics.ts';
import { peerRoutes } from './peer-routes.ts';
import { PskVault } from './psk-vault.ts';
import { Reconciler } from './reconcile.ts';
import { RecordCache } from './record-cache.ts';
import { federationRoutes } from './routes.ts';
import { FederationService } from './service.ts';
import { createAllowlistStore, createFederationStore, createNonceStore, loadClusterIdentity } from './store.ts';
import { fillKeyIds, reportDeclaredDuplicates, startUpkeep, watchNameCollisions } from './upkeep.ts';

export { BROKERED_JOB_CANCELLER, type BrokeredJobCanceller } from './allowlist.ts';
export { type AllowlistEntryView, FEDERATIONS, type FederationDirectory } from './directory.ts';
export { FederationErrors } from './errors.ts';
export type { FederationRecordView } from './wire.ts';

/** The schema's default `clusterName`: left on it, a cluster advertises the name chosen at its first start. */
const DEFAULT_CLUSTER_NAME = 'meshgate';

export const federationModule: HandlerModule = {
  name: 'federation',
  errors: FederationErrors,
  commands: [federationCommand],
  init(deps) {
    const agents = new PeerAgents(deps.config.federation.peerTimeoutMs);
    const vault = PskVault.open(deps.config.dataDir);
    const records = createFederationStore(deps.db, (id) => cache.refresh(id));
    const cache = new RecordCache(records, (row) => pskOf({ vault }, row));
    const entries = new AllowlistCache((federationId, externalId) => ctx.allowlist.get(federationId, externalId));
    // Records and allowlists changed by another process or `meshgate federation` arrive by key on the feed.
    deps.feed.subscribe('federations', (id) => cache.refresh(id));
    deps.feed.onReset('federations', () => cache.reload());
    deps.feed.subscribe('federation_users', (key) => {
      const [federationId, externalId] = JSON.parse(key) as [string, string];
      entries.forget(federationId, externalId);
    });
    deps.feed.onReset('federation_users', () => entries.clear());
    const identity = loadClusterIdentity(deps.db, deps.now);
    const named = deps.config.clusterName !== DEFAULT_CLUSTER_NAME;
    const ctx: FederationContext = {
      records,
      allowlist: createAllowlistStore(deps.db, (federationId, externalId) => entries.forget(federationId, externalId)),
      cache,
      nonces: createNonceStore(deps.db),
      vault,
      local: {
        id: identity.clusterId,
        name: named ? deps.config.clusterName : (identity.defaultName ?? DEFAULT_CLUSTER_NAME),
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
      pairChecks: pairCheckCounter(deps.metrics),
      now: deps.now,
    };
    const outcomes = observeFederations(deps.metrics, cache, agents);
    // A record that leaves PAIRED gives its peer pool back (a re-pair is a new record with a pool of its own).
    cache.onChange((before, after) => {
      if (before && after?.row.status !== 'PAIRED') agents.release(before.row.id);
    });
    watchNameCollisions(ctx);
    const declared = { ctx, service: new FederationService(ctx), allowlist: new AllowlistService(ctx) };
    const owner = deps.process.role !== 'worker' && deps.purpose === 'serve';
    const intervalMs = deps.config.federation.reconcileIntervalSeconds * 1000;
    const reconciler = owner && intervalMs > 0 ? new Reconciler(ctx, { intervalMs, outcomes }) : null;
    if (reconciler) cache.onChange((before, after) => reconciler.track(before, after));
    cache.reload();
    if (owner) {
      fillKeyIds(ctx);
      reportDeclaredDuplicates(ctx);
    }
    const upkeep = owner ? startUpkeep(declared, deps.config.federation, ctx.local.name) : null;
    deps.services.provide(FEDERATIONS, createDirectory(ctx, entries));
    const max = deps.config.limits.maxBodyBytes;
    return {
      routes: [...federationRoutes(declared, max), ...allowlistRoutes(declared.allowlist, max), ...peerRoutes(ctx)],
      close: () => {
        reconciler?.close();
        upkeep?.close();
        return agents.closeAll();
      },
    };
  },
};
