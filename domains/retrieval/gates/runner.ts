/**
 * The gate runner, the release boundary (docs/retrieval.md): every batch goes
 * through the bound gate, its GateResult is checked against the
 * postconditions, and a violation fails the whole batch closed (no row
 * released, audit reason `gate_postcondition_violation`). The footer the
 * transports emit carries only `filtered`; the four legacy keys are present
 * and null (the 1.3 privacy rule).
 */
import type { GateCatalog } from '../../gates/index.ts';
import type { Row } from '../sources/types.ts';
import { clearanceGate } from './clearance.ts';
import type { GateBinding, GateDefinition, GateResult, RecordGate } from './types.ts';

export const BUILT_IN_GATES: readonly GateDefinition[] = [clearanceGate];

/** The built-in gate for a class path or one of its upstream aliases. */
export function findGate(type: string): GateDefinition | undefined {
  return BUILT_IN_GATES.find((g) => g.type === type || g.aliases.includes(type));
}

export interface GateAudit {
  filtered: boolean;
  included: null;
  redacted: null;
  total: null;
  gate: null;
}

/** The record gates this gateway ships, for discovery (domains/gates). */
export const recordGateCatalog: GateCatalog = {
  describe(classpath) {
    const gate = findGate(classpath);
    if (!gate) return undefined;
    const { name, kind, requiredAttributes, configSchema } = gate;
    return {
      name,
      kind,
      required_attributes: requiredAttributes,
      config_schema: configSchema,
      classpath,
      location: 'builtin',
    };
  },
};

export function gateAudit(filtered: boolean): GateAudit {
  return { filtered, included: null, redacted: null, total: null, gate: null };
}

export interface GateOutcome {
  readonly released: Row[];
  readonly withheld: number;
  /** Set when the gate broke its postconditions and the batch failed closed. */
  readonly violation: string | null;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** Why a GateResult may not be trusted, or null when it keeps every invariant. */
export function postconditionViolation(input: readonly Row[], result: GateResult): string | null {
  const {
    records,
    included_count: included,
    redacted_count: redacted,
    total_count: total,
  } = result ?? ({} as GateResult);
  if (!Array.isArray(records)) return 'records is not a list';
  if (!isCount(included) || !isCount(redacted) || !isCount(total)) return 'counts are not integers';
  if (included !== records.length) return 'included_count != len(records)';
  if (included + redacted !== total || total !== input.length) return 'included + redacted != total != len(input)';
  // A gate releases input records, never new ones (it filters; it does not fabricate rows).
  const inputs = new Set(input);
  if (records.some((r) => !inputs.has(r))) return 'records not drawn from the input';
  return null;
}

export class GateRunner {
  readonly #gate: RecordGate;

  constructor(
    gate: RecordGate,
    private readonly userAttrs: Readonly<Record<string, unknown>>,
  ) {
    this.#gate = gate;
  }

  get requiredFields(): readonly string[] {
    return this.#gate.requiredFields;
  }

  run(batch: readonly Row[]): GateOutcome {
    let result: GateResult;
    try {
      result = this.#gate.filterRecords(batch, this.userAttrs);
    } catch (error) {
      return {
        released: [],
        withheld: batch.length,
        violation: `gate raised: ${error instanceof Error ? error.name : 'error'}`,
      };
    }
    const violation = postconditionViolation(batch, result);
    if (violation) return { released: [], withheld: batch.length, violation };
    return { released: [...result.records], withheld: result.redacted_count, violation: null };
  }
}

/** Builds the runner for a dataset's binding; a binding naming no built-in gate fails closed (withholds all). */
export function runnerFor(binding: GateBinding, userAttrs: Readonly<Record<string, unknown>>): GateRunner {
  const definition = findGate(binding.type);
  const parsed = definition?.parseConfig(binding.config);
  if (!definition || !parsed || 'problems' in parsed) return new GateRunner(withholdAll, userAttrs);
  return new GateRunner(definition.create(parsed.config), userAttrs);
}

/** A gate that can no longer be loaded releases nothing (fail closed, like gate_load_error). */
const withholdAll: RecordGate = {
  name: 'unloadable_gate',
  requiredFields: [],
  filterRecords: (records) => ({
    records: [],
    audit: [],
    included_count: 0,
    redacted_count: records.length,
    total_count: records.length,
  }),
};
