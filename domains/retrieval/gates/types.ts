/**
 * Per-record (attribute) gates: a gate is called as
 * `filter_records(records, user_attrs, gate_config)` and answers a
 * GateResult whose counts the runner checks before any row is released.
 */
import type { Row } from '../sources/types.ts';

export interface GateAuditEntry {
  readonly record_index: number;
  readonly decision: 'INCLUDED' | 'REDACTED';
  readonly reason: string;
  readonly gate: string;
  readonly attributes_checked: readonly string[];
}

export interface GateResult {
  readonly records: readonly Row[];
  readonly audit: readonly GateAuditEntry[];
  readonly included_count: number;
  readonly redacted_count: number;
  readonly total_count: number;
}

/** A gate with its config applied, ready to filter batches. */
export interface RecordGate {
  readonly name: string;
  /** Row fields the gate reads; the pipeline reads them from the source even when `columns` omits them. */
  readonly requiredFields: readonly string[];
  filterRecords(records: readonly Row[], userAttrs: Readonly<Record<string, unknown>>): GateResult;
}

/** A built-in gate class: its class path, accepted aliases, config schema and constructor. */
export interface GateDefinition {
  readonly type: string;
  /** Upstream class paths public clients send (accepted as aliases of the neutral names). */
  readonly aliases: readonly string[];
  readonly name: string;
  readonly kind: 'attribute';
  /** Caller attributes it reads, as discovery reports them (the AttributeSpec shape). */
  readonly requiredAttributes: readonly { key: string; header: string; required: boolean }[];
  /** JSON Schema of its `config`, as discovery reports it; parseConfig enforces it. */
  readonly configSchema: Readonly<Record<string, unknown>>;
  /** Validates and fills defaults; returns problems instead of throwing. */
  parseConfig(config: unknown): { config: Record<string, unknown> } | { problems: string[] };
  create(config: Record<string, unknown>): RecordGate;
}

/** What `properties.gate` holds on a dataset. */
export interface GateBinding {
  readonly type: string;
  readonly config: Record<string, unknown>;
}
