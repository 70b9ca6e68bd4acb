/**
 * What gate classes this gateway ships, as `POST /authz/gates/discover`
 * describes them. The classes live with the domain that runs
 * them — execution gates in jobs, per-record gates in retrieval — and each
 * provides its catalog under a key here, so this module never imports them.
 */
import { z } from 'zod';
import type { ApiError } from '../../gateway/errors/api-error.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { GateErrors } from './errors.ts';

/** A gate's reflection payload (the SDK's `GateDiscovery`), as the API document states it. */
export const gateDescriptionAnswer = z.object({
  name: z.string(),
  kind: z.enum(['execution', 'attribute']),
  required_attributes: z.array(z.object({ key: z.string(), header: z.string(), required: z.boolean() })).readonly(),
  config_schema: z.record(z.string(), z.unknown()).readonly().describe("JSON Schema of the binding's `config`"),
  classpath: z.string(),
  location: z.literal('builtin'),
});

export type GateDescription = z.output<typeof gateDescriptionAnswer>;

export interface GateCatalog {
  /** By class path or one of its upstream aliases; undefined when this catalog has no such class. */
  describe(classpath: string): GateDescription | undefined;
}

export const EXECUTION_GATE_CATALOG = createServiceKey<GateCatalog>('executionGateCatalog');
export const RECORD_GATE_CATALOG = createServiceKey<GateCatalog>('recordGateCatalog');

/**
 * Modules gate classes come from: a class path under one of them that names no shipped gate is unimportable, not
 * forbidden.
 */
const GATE_MODULES: readonly string[] = ['kamiwaza.services.authz.gates.', 'platform.gates.', 'acme_gates.'];

/** The error for a class path no catalog ships, the same for discovery and both bindings. */
export function unshippedGate(classpath: string): ApiError {
  return GATE_MODULES.some((prefix) => classpath.startsWith(prefix))
    ? GateErrors.make.classpath_unimportable({ classpath })
    : GateErrors.make.classpath_not_allowed({ classpath });
}
