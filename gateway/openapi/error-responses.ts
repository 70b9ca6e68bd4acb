/**
 * The refusals of an operation, grouped by status, each with the body the error writer sends
 * (ApiError.body): `{"detail": {"reason", ...extra, "request_id"}}`, the string `detail` of the
 * few reasons public clients match as strings, or the FastAPI-style 422 list.
 */
import { createHash } from 'node:crypto';
import type { RegistryEntry } from '../errors/registry.ts';
import type { JsonSchema } from './document.ts';

const VALIDATION_REASON = 'request_validation_failed';

const validationBody: JsonSchema = {
  type: 'object',
  required: ['detail'],
  properties: {
    detail: {
      type: 'array',
      items: {
        type: 'object',
        required: ['loc', 'msg', 'type'],
        properties: {
          loc: { type: 'array', items: { type: ['string', 'integer'] } },
          msg: { type: 'string' },
          type: { type: 'string' },
        },
      },
    },
    request_id: { type: 'string' },
  },
};

function reasonBody(reasons: readonly string[]): JsonSchema {
  return {
    type: 'object',
    required: ['detail'],
    properties: {
      detail: {
        type: 'object',
        required: ['reason', 'request_id'],
        properties: { reason: { enum: reasons }, request_id: { type: 'string' }, message: { type: 'string' } },
      },
    },
  };
}

const stringDetailBody = (detail: string): JsonSchema => ({
  type: 'object',
  required: ['detail'],
  properties: { detail: { const: detail } },
});

function bodyFor(entries: readonly RegistryEntry[]): JsonSchema {
  const shapes: JsonSchema[] = [];
  const structured = entries
    .filter((e) => e.stringDetail === undefined && e.reason !== VALIDATION_REASON)
    .map((e) => e.reason);
  if (structured.length > 0) shapes.push(reasonBody(structured));
  for (const entry of entries) if (entry.stringDetail !== undefined) shapes.push(stringDetailBody(entry.stringDetail));
  if (entries.some((e) => e.reason === VALIDATION_REASON)) shapes.push(validationBody);
  return shapes.length === 1 ? (shapes[0] as JsonSchema) : { anyOf: shapes };
}

/** Responses shared by the operations that refuse alike: `components.responses`, by name. */
export type SharedResponses = Map<string, JsonSchema>;

/**
 * Responses keyed by status for the given reasons, each a reference into `components.responses`: most operations
 * refuse with the same few sets of reasons, and a set's descriptions written once keep the document a fraction of
 * the size (every validator and client generator reads the whole of it). An unregistered reason is a wiring bug
 * and fails the build.
 */
export function errorResponses(
  reasons: readonly string[],
  registry: ReadonlyMap<string, RegistryEntry>,
  shared: SharedResponses,
): Record<string, JsonSchema> {
  const byStatus = new Map<number, RegistryEntry[]>();
  for (const reason of reasons) {
    const entry = registry.get(reason);
    if (!entry) throw new Error(`the API document names '${reason}', which no error table registers`);
    byStatus.set(entry.status, [...(byStatus.get(entry.status) ?? []), entry]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, entries]) => {
      const sorted = [...entries].sort((a, b) => a.reason.localeCompare(b.reason));
      const key = sorted.map((e) => e.reason).join(' ');
      const name = `Refused${status}_${createHash('sha256').update(key).digest('hex').slice(0, 10)}`;
      if (!shared.has(name)) {
        shared.set(name, {
          description: sorted.map((e) => `\`${e.reason}\`: ${e.doc}`).join('\n\n'),
          content: { 'application/json': { schema: bodyFor(sorted) } },
        });
      }
      return [String(status), { $ref: `#/components/responses/${name}` }];
    }),
  );
}
