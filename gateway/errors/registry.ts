/**
 * Merges every domain's error table into one registry (fastify registers
 * every code in one place). Duplicate reasons across domains fail at start;
 * test/unit/scripts/errors-doc.test.ts keeps the registry and ERRORS.md in sync.
 */
import type { ErrorDef, ErrorTable } from './api-error.ts';

export interface RegistryEntry extends ErrorDef {
  reason: string;
  domain: string;
}

export function buildErrorRegistry(tables: readonly ErrorTable[]): ReadonlyMap<string, RegistryEntry> {
  const registry = new Map<string, RegistryEntry>();
  for (const table of tables) {
    for (const [reason, def] of Object.entries(table.defs) as [string, ErrorDef][]) {
      const prior = registry.get(reason);
      if (prior)
        throw new Error(`error reason '${reason}' is declared by both '${prior.domain}' and '${table.domain}'`);
      registry.set(reason, { ...def, reason, domain: table.domain });
    }
  }
  return registry;
}
