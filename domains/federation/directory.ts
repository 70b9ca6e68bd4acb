/**
 * FEDERATIONS: what the mesh proxy and mesh ingress need from
 * this domain, without reaching into its tables: this cluster's identity,
 * PAIRED records for selector resolution, PSK access for signing and
 * verifying, the per-peer agent, the shared-issuer policy and the
 * allowlist lookups used at brokered-user admission.
 */
import type { KeyObject } from 'node:crypto';
import type { PeerAgent } from '../../gateway/mesh/peer-agent.ts';
import { createServiceKey } from '../../gateway/services.ts';
import type { TupleInput } from '../authz/index.ts';
import { type FederationContext, pskOf } from './context.ts';
import { memoize } from './memo.ts';
import { renderRecipe } from './recipe.ts';
import type { FederationRow } from './store.ts';
import { entryView, type FederationRecordView, recordView } from './wire.ts';

export type AllowlistEntryView = ReturnType<typeof entryView>;

export interface FederationDirectory {
  readonly localClusterId: string;
  readonly localClusterName: string;
  /** PAIRED records (selectors consider only these). */
  paired(): readonly FederationRecordView[];
  /**
   * Records pinned to a peer's cluster id (X-KZ-Mesh-Source-Cluster-Id), DELETED excluded; status tells PAIRED from not
   * active.
   */
  byRemoteClusterId(remoteClusterId: string): readonly FederationRecordView[];
  /** One record by this cluster's id for it (X-KZ-Mesh-Federation-Id), DELETED excluded. */
  byId(federationId: string): FederationRecordView | undefined;
  /** The pairing PSK as a KeyObject (never serialized, never logged); null once deleted. */
  psk(federationId: string): KeyObject | null;
  /** The agent that connects to the peer's primary ip with Host/SNI = hostname, trusting only the stored peer CA. */
  peerAgent(federationId: string): PeerAgent | null;
  /** PLATFORM_TRUSTED_SHARED_ISSUERS: empty trusts none. */
  isTrustedSharedIssuer(issuer: string): boolean;
  allowlistEntry(federationId: string, externalId: string): AllowlistEntryView | undefined;
  /** First admission: remember the receiver-local user and flip auto_provisioned. */
  markProvisioned(federationId: string, externalId: string, localUserId: string): AllowlistEntryView;
  /** The entry's tuple recipe rendered for the local user ({{user_id}}, {{external_id}}). */
  renderEntryTuples(entry: AllowlistEntryView, localUserId: string): TupleInput[];
  /** Records mesh traffic on the record (last_activity). */
  touch(federationId: string): void;
}

export const FEDERATIONS = createServiceKey<FederationDirectory>('federations');

const trimSlash = (url: string) => url.replace(/\/+$/, '');

export function createDirectory(ctx: FederationContext): FederationDirectory {
  const trusted = new Set(ctx.policy.trustedSharedIssuers.map(trimSlash));
  // Reads on every mesh request, remembered until the next write (memo.ts).
  const memo = <V>(load: (key: string) => V) => memoize(ctx.changes, load);
  const views = (rows: FederationRow[]) => Object.freeze(rows.map((row) => Object.freeze(recordView(row))));
  const paired = memo(() => views(ctx.records.byStatus(['PAIRED'])));
  const bySource = memo((id) =>
    views(ctx.records.byRemoteClusterId(id, ['WAITING', 'PAIRING', 'PAIRED', 'DISCONNECTED'])),
  );
  const byId = memo((id) => {
    const row = ctx.records.get(id);
    return row && row.status !== 'DELETED' ? Object.freeze(recordView(row)) : undefined;
  });
  const psk = memo((id) => {
    const row = ctx.records.get(id);
    return row ? pskOf(ctx, row) : null;
  });
  const agent = memo((id) => {
    const row = ctx.records.get(id);
    return row?.status === 'PAIRED' ? ctx.agents.for(row) : null;
  });
  const entry = memo((key) => {
    const [federationId, externalId] = key.split('\n') as [string, string];
    const row = ctx.allowlist.get(federationId, externalId);
    return row ? Object.freeze(entryView(row)) : undefined;
  });
  return {
    localClusterId: ctx.local.id,
    localClusterName: ctx.local.name,
    paired: () => paired(''),
    byRemoteClusterId: (remoteClusterId) => bySource(remoteClusterId.toLowerCase()),
    byId,
    psk,
    peerAgent: agent,
    isTrustedSharedIssuer: (issuer) => trusted.has(trimSlash(issuer)),
    allowlistEntry: (federationId, externalId) => entry(`${federationId}\n${externalId}`),
    markProvisioned: (federationId, externalId, localUserId) =>
      entryView(
        ctx.allowlist.update(federationId, externalId, {
          autoProvisioned: true,
          localUserId,
          updatedAt: ctx.now().toISOString(),
        }),
      ),
    renderEntryTuples: (entry, localUserId) =>
      renderRecipe(entry.initial_tuples, { userId: localUserId, externalId: entry.external_id }),
    touch: (federationId) => void ctx.records.update(federationId, { lastActivity: ctx.now().toISOString() }),
  };
}
