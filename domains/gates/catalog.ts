/**
 * What gate classes this gateway ships, as `POST /authz/gates/discover`
 * describes them. The classes live with the domain that runs
 * them — execution gates in jobs, per-record gates in retrieval — and each
 * provides its catalog under a key here, so this module never imports them.
 */
import type { ApiError } from '../../gateway/errors/api-error.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { GateErrors } from './errors.ts';

/** A gate's reflection payload (the SDK's `GateDiscovery`). */
export interface GateDescription {
  readonly name: string;
  readonly kind: 'execution' | 'attribute';
  /** `AttributeSpec`s: the caller attributes the gate reads. */
  readonly required_attributes: readonly { key: string; header: string; required: boolean }[];
  /** JSON Schema of the binding's `config`. */
  readonly config_schema: Readonly<Record<string, unknown>>;
  readonly classpath: string;
  /** Where the class comes from: every gate here is built in. */
  readonly location: 'builtin';
}

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
