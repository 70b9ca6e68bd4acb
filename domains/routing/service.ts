/**
 * Routing configuration: read,
 * merge-patch key by key, validate as a whole, persist, then publish to the
 * gateway, which swaps its live table atomically.
 */
import { z } from 'zod';
import type { RoutingSnapshot, RoutingSource } from '../../gateway/routing/source.ts';
import { RoutingErrors } from './errors.ts';
import type { RoutingStore } from './store.ts';
import { DEFAULT_ENABLED, DEFAULT_PREFIXES, type RoutingTable, routingProblems } from './validate.ts';

export interface RoutingPatch {
  base_host?: string | null | undefined;
  service_prefixes?: Record<string, string> | null | undefined;
  enabled_services?: Record<string, boolean> | null | undefined;
}

const routingFlat = z.object({
  mode: z.literal('path'),
  model_routing_method: z.literal('path'),
  base_host: z.string(),
  service_prefixes: z.record(z.string(), z.string()).describe('service → path prefix'),
  enabled_services: z.record(z.string(), z.boolean()).describe('service → on'),
  updated_at: z.string(),
});
/** The configuration as clients read it: flat, and the same again under `routing`. */
export const routingAnswer = routingFlat.extend({ routing: routingFlat });

export class RoutingService implements RoutingSource {
  readonly #listeners: ((snapshot: RoutingSnapshot) => void)[] = [];

  constructor(
    private readonly store: RoutingStore,
    private readonly origin: () => string,
    private readonly now: () => Date,
  ) {}

  #table(): { table: RoutingTable; storedBaseHost: string | null; updatedAt: string | null } {
    const row = this.store.load();
    return {
      table: {
        baseHost: row?.baseHost ?? this.origin(),
        prefixes: { ...DEFAULT_PREFIXES, ...row?.servicePrefixes },
        enabled: { ...DEFAULT_ENABLED, ...row?.enabledServices },
      },
      storedBaseHost: row?.baseHost ?? null,
      updatedAt: row?.updatedAt ?? null,
    };
  }

  current(): RoutingSnapshot {
    const { table } = this.#table();
    return { prefixes: table.prefixes, enabled: table.enabled };
  }

  subscribe(listener: (snapshot: RoutingSnapshot) => void): void {
    this.#listeners.push(listener);
  }

  /** Hands the stored configuration to the gateway: after a PATCH here, or one by another process (change feed). */
  republish(): void {
    const snapshot = this.current();
    for (const listener of this.#listeners) listener(snapshot);
  }

  /** The flat object clients read, plus `model_routing_method` and a `routing` mirror (docs/wire.md). */
  view(): z.output<typeof routingAnswer> {
    const { table, updatedAt } = this.#table();
    const flat = {
      mode: 'path' as const,
      model_routing_method: 'path' as const,
      base_host: table.baseHost,
      service_prefixes: table.prefixes,
      enabled_services: table.enabled,
      updated_at: updatedAt ?? new Date(0).toISOString(),
    };
    return { ...flat, routing: { ...flat } };
  }

  /** The live table with a patch applied, not saved. */
  #patched(input: RoutingPatch): RoutingTable {
    const { table } = this.#table();
    return {
      baseHost: input.base_host ?? table.baseHost,
      prefixes: { ...table.prefixes, ...input.service_prefixes },
      enabled: { ...table.enabled, ...input.enabled_services },
    };
  }

  /** A dry run of patch(): every problem the patch would be refused for, nothing applied. */
  validate(input: RoutingPatch) {
    const problems = routingProblems(this.#patched(input));
    return { valid: problems.length === 0, problems };
  }

  patch(input: RoutingPatch) {
    const { storedBaseHost } = this.#table();
    const next = this.#patched(input);
    const problems = routingProblems(next);
    if (problems.length > 0) throw RoutingErrors.make.routing_config_invalid({ problems });
    this.store.save({
      baseHost: input.base_host ? new URL(input.base_host).origin : storedBaseHost,
      servicePrefixes: next.prefixes,
      enabledServices: next.enabled,
      updatedAt: this.now().toISOString(),
    });
    this.republish();
    return this.view();
  }
}
