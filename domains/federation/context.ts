/**
 * What every part of the federation domain shares (records, pairing, peer
 * protocol, allowlist, diagnose): stores, the PSK vault, this cluster's
 * identity, policy and the per-peer agents. Built once in index.ts.
 */
import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../../gateway/config/schema.ts';
import { pskKey } from '../../gateway/mesh/canonical.ts';
import { createPeerAgent, type PeerAgent } from '../../gateway/mesh/peer-agent.ts';
import type { ServiceRegistry } from '../../gateway/services.ts';
import type { AuthzService } from '../authz/index.ts';
import { FederationErrors } from './errors.ts';
import type { PskVault } from './psk-vault.ts';
import type { RecordCache } from './record-cache.ts';
import type { AllowlistStore, FederationRow, FederationStore, NonceStore } from './store.ts';
import { caFingerprint, primaryRoute } from './wire.ts';

export interface LocalCluster {
  readonly id: string;
  readonly name: string;
  caPem(): string;
  /** This gateway's public origin (for the addresses it advertises at pairing). */
  origin(): string;
  readonly bind: string;
  readonly hostnames: readonly string[];
}

export interface FederationContext {
  readonly records: FederationStore;
  readonly allowlist: AllowlistStore;
  readonly nonces: NonceStore;
  /** The records in memory, refreshed per record on each write (record-cache.ts): what the mesh reads. */
  readonly cache: RecordCache;
  readonly vault: PskVault;
  readonly local: LocalCluster;
  readonly policy: Readonly<Config['federation']>;
  /** Mesh hardening this cluster offers at pairing (config mesh.features). */
  readonly meshFeatures: readonly string[];
  readonly authz: AuthzService;
  readonly services: ServiceRegistry;
  readonly logger: Logger;
  readonly agents: PeerAgents;
  /** Counts the PSK signature checks of /remote/pair (metrics.ts): a few per call, whatever the WAITING records. */
  readonly pairChecks: { inc(checks: number): void };
  now(): Date;
}

export function requireRecord(ctx: FederationContext, id: string): FederationRow {
  const row = ctx.records.get(id);
  if (!row) throw FederationErrors.make.federation_not_found({ federation_id: id });
  return row;
}

export function pskOf(ctx: Pick<FederationContext, 'vault'>, row: FederationRow): KeyObject | null {
  return row.pskEnc ? pskKey(ctx.vault.open(row.id, row.pskEnc)) : null;
}

/**
 * Per-peer undici agents trusting only the stored peer CA, reused across
 * calls and rebuilt when the route or the CA changes (re-pair).
 */
export class PeerAgents {
  readonly #agents = new Map<string, { key: string; agent: PeerAgent }>();

  constructor(private readonly timeoutMs: number) {}

  /** null when the record has no route or no peer CA yet (never paired). */
  for(row: FederationRow): PeerAgent | null {
    const route = primaryRoute(row);
    if (!route || !row.remoteCaPem) return null;
    const key = `${route.ip}|${route.hostname ?? ''}|${caFingerprint(row.remoteCaPem)}`;
    const cached = this.#agents.get(row.id);
    if (cached?.key === key) return cached.agent;
    if (cached) this.release(row.id);
    const agent = createPeerAgent(route, { caPem: row.remoteCaPem }, this.options());
    this.#agents.set(row.id, { key, agent });
    return agent;
  }

  options() {
    return { connectTimeoutMs: this.timeoutMs, headersTimeoutMs: this.timeoutMs, bodyTimeoutMs: this.timeoutMs };
  }

  /** Closes the record's pool, if it has one: its record left PAIRED (or its route or CA changed). */
  release(id: string): void {
    const cached = this.#agents.get(id);
    if (!cached) return;
    this.#agents.delete(id);
    void cached.agent.close().catch(() => {});
  }

  /** Pools currently open, one per PAIRED record that has been called. */
  get size(): number {
    return this.#agents.size;
  }

  async closeAll(): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(agents.map(({ agent }) => agent.close().catch(() => {})));
  }
}
