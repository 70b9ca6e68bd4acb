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
import type { FederationContext } from './context.ts';
import { renderRecipe } from './recipe.ts';
import type { AllowlistRow } from './store.ts';
import { entryView, type FederationRecordView } from './wire.ts';

export type AllowlistEntryView = ReturnType<typeof entryView>;

export interface FederationDirectory {
  readonly localClusterId: string;
  readonly localClusterName: string;
  /**
   * PAIRED records (selectors consider only these): the same frozen array until the PAIRED set or one of its records
   * changes, so a caller may index it once per array.
   */
  paired(): readonly FederationRecordView[];
  /**
   * Records pinned to a peer's cluster id (X-KZ-Mesh-Source-Cluster-Id), DELETED excluded; status tells PAIRED from not
   * active.
   */
  byRemoteClusterId(remoteClusterId: string): readonly FederationRecordView[];
  /**
   * One record by this cluster's id for it (X-KZ-Mesh-Federation-Id), DELETED excluded. Views are cached: their
   * last_activity and last_ping may lag (the API reads the table).
   */
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

/**
 * Allowlist entries the mesh admitted, in memory until their row changes. Only entries that exist are kept: a
 * lookup that misses (a user not on the list, refused anyway) reads the table, so keys a peer makes up cannot grow
 * the map.
 */
export class AllowlistCache {
  readonly #entries = new Map<string, AllowlistEntryView>();

  constructor(private readonly load: (federationId: string, externalId: string) => AllowlistRow | undefined) {}

  get(federationId: string, externalId: string): AllowlistEntryView | undefined {
    const key = `${federationId}\n${externalId}`;
    const cached = this.#entries.get(key);
    if (cached) return cached;
    const row = this.load(federationId, externalId);
    if (!row) return undefined;
    const entry = Object.freeze(entryView(row));
    this.#entries.set(key, entry);
    return entry;
  }

  forget(federationId: string, externalId: string): void {
    this.#entries.delete(`${federationId}\n${externalId}`);
  }

  clear(): void {
    this.#entries.clear();
  }
}

export function createDirectory(ctx: FederationContext, entries: AllowlistCache): FederationDirectory {
  const trusted = new Set(ctx.policy.trustedSharedIssuers.map(trimSlash));
  return {
    localClusterId: ctx.local.id,
    localClusterName: ctx.local.name,
    paired: () => ctx.cache.paired(),
    byRemoteClusterId: (remoteClusterId) => ctx.cache.bySource(remoteClusterId.toLowerCase()).map((r) => r.view),
    byId: (federationId) => ctx.cache.get(federationId)?.view,
    psk: (federationId) => ctx.cache.key(federationId),
    peerAgent(federationId) {
      const record = ctx.cache.get(federationId);
      return record?.row.status === 'PAIRED' ? ctx.agents.for(record.row) : null;
    },
    isTrustedSharedIssuer: (issuer) => trusted.has(trimSlash(issuer)),
    allowlistEntry: (federationId, externalId) => entries.get(federationId, externalId),
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
