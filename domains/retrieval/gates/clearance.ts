/**
 * The built-in clearance gate (the MiniClearance fixture's
 * semantics): ranks U < S < TS; the caller's `clearance` attribute, trimmed
 * and upper-cased, unknown or missing floors to U; a row is included iff its
 * classification is recognized and ranks at or below the caller's.
 */
import type { Row } from '../sources/types.ts';
import type { GateAuditEntry, GateDefinition, RecordGate } from './types.ts';

const RANKS: Readonly<Record<string, number>> = { U: 0, S: 1, TS: 2 };
const NAME = 'clearance_gate';

function rankOf(value: unknown): number | undefined {
  return typeof value === 'string' ? RANKS[value.trim().toUpperCase()] : undefined;
}

function createClearanceGate(field: string): RecordGate {
  return {
    name: NAME,
    requiredFields: [field],
    filterRecords(records, userAttrs) {
      const callerRank = rankOf(userAttrs.clearance) ?? 0;
      const kept: Row[] = [];
      const audit: GateAuditEntry[] = records.map((record, index) => {
        const rowRank = rankOf(record[field]);
        const reason =
          rowRank === undefined
            ? 'classification_unrecognized'
            : rowRank <= callerRank
              ? 'clearance_sufficient'
              : 'clearance_insufficient';
        const included = reason === 'clearance_sufficient';
        if (included) kept.push(record);
        return {
          record_index: index,
          decision: included ? 'INCLUDED' : 'REDACTED',
          reason,
          gate: NAME,
          attributes_checked: ['clearance'],
        };
      });
      return {
        records: kept,
        audit,
        included_count: kept.length,
        redacted_count: records.length - kept.length,
        total_count: records.length,
      };
    },
  };
}

export const clearanceGate: GateDefinition = {
  type: 'platform.gates.clearance.ClearanceGate',
  aliases: ['acme_gates.mini_clearance_gate.MiniClearanceGate'],
  name: NAME,
  kind: 'attribute',
  requiredAttributes: [{ key: 'clearance', header: 'x-user-clearance', required: true }],
  configSchema: {
    type: 'object',
    properties: { classification_field: { type: 'string', minLength: 1, maxLength: 256, default: 'classification' } },
    additionalProperties: false,
  },
  parseConfig(config) {
    // Config schema {"classification_field": str = "classification"}, additionalProperties false.
    const value = config ?? {};
    if (typeof value !== 'object' || Array.isArray(value)) return { problems: ['config must be an object'] };
    const extra = Object.keys(value).filter((k) => k !== 'classification_field');
    if (extra.length > 0) return { problems: extra.map((k) => `unknown config key '${k}'`) };
    const field = (value as Record<string, unknown>).classification_field ?? 'classification';
    if (typeof field !== 'string' || field.length === 0 || field.length > 256)
      return { problems: ['classification_field must be a non-empty string'] };
    return { config: { classification_field: field } };
  },
  create: (config) => createClearanceGate(config.classification_field as string),
};
