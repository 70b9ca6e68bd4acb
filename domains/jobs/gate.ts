/**
 * The cluster execution gate: at most one binding, chosen
 * from the gates this gateway ships, consulted once per submission. Without
 * a binding, local submissions are allowed and mesh submissions refused.
 * Class paths are accepted under the upstream `kamiwaza.` literal the SDK
 * sends and under the neutral `platform.` alias.
 */

import { z } from 'zod';
import type { Principal } from '../../gateway/principal.ts';
import { type GateCatalog, GateErrors, unshippedGate } from '../gates/index.ts';
import { JobsErrors } from './errors.ts';
import type { GateStore } from './store.ts';

export interface GateInput {
  readonly source: 'local' | 'mesh';
  readonly userId: string;
  readonly entrypoint: string;
  readonly attributes: Readonly<Record<string, unknown>>;
}

export interface GateDecision {
  readonly allow: boolean;
  readonly reason: string;
  readonly gate: string;
}

interface ExecutionGate {
  readonly name: string;
  /** Keys the gate's config may hold (additionalProperties: false). */
  readonly configKeys: readonly string[];
  decide(input: GateInput, config: Readonly<Record<string, unknown>>): { allow: boolean; reason: string };
}

const allowAll: ExecutionGate = {
  name: 'allow_all_execution_gate',
  configKeys: [],
  decide: () => ({ allow: true, reason: 'default_allow_all' }),
};

const BUILT_IN: ReadonlyMap<string, ExecutionGate> = new Map([
  ['kamiwaza.services.authz.gates.default_gates.AllowAllExecutionGate', allowAll],
  ['platform.gates.default_gates.AllowAllExecutionGate', allowAll],
]);

/** The execution gates this gateway ships, for discovery (domains/gates). */
export const executionGateCatalog: GateCatalog = {
  describe(classpath) {
    const gate = BUILT_IN.get(classpath);
    if (!gate) return undefined;
    const properties = Object.fromEntries(gate.configKeys.map((key) => [key, {}]));
    const config_schema = { type: 'object', properties, additionalProperties: false };
    return {
      name: gate.name,
      kind: 'execution',
      required_attributes: [],
      config_schema,
      classpath,
      location: 'builtin',
    };
  },
};

export const UNCONFIGURED = '(unconfigured)';

/** The binding: the gate's classpath (`type`), its configuration, and the built-in gate's name. */
export const gateAnswer = z.object({
  type: z.string(),
  config: z.record(z.string(), z.unknown()),
  gate_name: z.string(),
  kind: z.literal('execution'),
});
export type GateView = z.output<typeof gateAnswer>;

export const gateUnboundAnswer = z.object({ deleted: z.literal(true), previous_type: z.string() });

export class ExecutionGateService {
  constructor(
    private readonly store: GateStore,
    private readonly now: () => Date,
    /** The record gates retrieval ships, so that binding one here is `wrong_kind`, as discovery tells them apart. */
    private readonly recordGates: GateCatalog | undefined,
  ) {}

  view(): GateView {
    const row = this.store.get();
    if (!row) throw GateErrors.make.not_configured();
    return {
      type: row.type,
      config: row.config,
      gate_name: BUILT_IN.get(row.type)?.name ?? UNCONFIGURED,
      kind: 'execution',
    };
  }

  bind(principal: Principal, type: string, config: Record<string, unknown>): GateView {
    const gate = BUILT_IN.get(type);
    if (!gate) {
      if (this.recordGates?.describe(type))
        throw GateErrors.make.wrong_kind({ classpath: type, expected: 'execution' });
      throw unshippedGate(type);
    }
    const unknown = Object.keys(config).filter((k) => !gate.configKeys.includes(k));
    if (unknown.length > 0) {
      throw GateErrors.make.gate_config_invalid({
        problems: unknown.map((k) => `config.${k}: not a setting of ${gate.name}`),
      });
    }
    this.store.put({ type, config, boundBy: principal.userId, boundAt: this.now().toISOString() });
    return this.view();
  }

  unbind(): z.output<typeof gateUnboundAnswer> {
    const row = this.store.get();
    if (!row) throw GateErrors.make.not_configured();
    this.store.clear();
    return { deleted: true, previous_type: row.type };
  }

  /** The default policy without a binding; a binding whose gate is gone fails closed. */
  decide(input: GateInput): GateDecision {
    const row = this.store.get();
    if (!row) {
      return input.source === 'mesh'
        ? { allow: false, reason: 'no_execution_gate_configured_for_mesh', gate: UNCONFIGURED }
        : { allow: true, reason: 'no_execution_gate_configured_local_allowed', gate: UNCONFIGURED };
    }
    const gate = BUILT_IN.get(row.type);
    if (!gate) return { allow: false, reason: 'gate_load_error', gate: row.type };
    return { ...gate.decide(input, row.config), gate: gate.name };
  }

  /** Throws the refusal for a denied decision (403 with `gate`). */
  enforce(input: GateInput): GateDecision {
    const decision = this.decide(input);
    if (decision.allow) return decision;
    if (decision.reason === 'no_execution_gate_configured_for_mesh')
      throw JobsErrors.make.no_execution_gate_configured_for_mesh({ gate: decision.gate });
    throw JobsErrors.make.gate_load_error({ gate: decision.gate });
  }
}
