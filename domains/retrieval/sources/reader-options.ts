/**
 * What a reader may send to a source. A dataset's owner fixes where its
 * data lives (table, topic, bucket, host, endpoint …) in its properties; a
 * reader's job may only narrow what is read from there, never point the
 * owner's stored credentials at something else. Each source declares one
 * table of the `options` keys a reader may set and how each combines with
 * the dataset's own value; `readerOptions()` is the one check, applied to
 * every job wherever it came from (REST, a mesh caller, any transport) when
 * its source is built. Keys are matched exactly: a key spelled another way
 * (`Table`, `TOPIC`) or a nested object under an unknown key is refused like
 * any other key off the table.
 *
 * `credentialFields()` holds a `credential_override` to the same line: its
 * JSON may carry credentials (and, for S3, an endpoint with its own keys),
 * nothing else.
 */
import { RetrievalErrors } from '../errors.ts';

/**
 * How a reader's value combines with the dataset's value of the same key
 * (its properties):
 * - `choice`: presentation only (how values are decoded); the reader's value is used.
 * - `subset`: a list; where the dataset sets one, the reader's must be within it.
 * - `at_most`: a positive cap; the smaller of the reader's and the dataset's applies.
 * - `unpinned`: the reader may set it only where the dataset sets none of `pinnedBy`
 *   (a start position the owner fixed cannot be moved earlier by another of its keys).
 */
export interface ReaderOptionRule {
  readonly kind: 'choice' | 'subset' | 'at_most' | 'unpinned';
  /** `unpinned` only: the dataset keys that fix it (default: the key itself). */
  readonly pinnedBy?: readonly string[];
}

type Settings = Readonly<Record<string, unknown>>;

/** Option key → rule; a key absent from the table is refused. */
export type ReaderOptionTable = Readonly<Record<string, ReaderOptionRule>>;

export const CHOICE: ReaderOptionRule = { kind: 'choice' };
export const SUBSET: ReaderOptionRule = { kind: 'subset' };
export const AT_MOST: ReaderOptionRule = { kind: 'at_most' };
/** Settable while the dataset sets none of `keys` (by default: the key itself). */
export const unpinned = (...keys: string[]): ReaderOptionRule =>
  keys.length > 0 ? { kind: 'unpinned', pinnedBy: keys } : { kind: 'unpinned' };

/** Names echoed in an error are the caller's own text: kept short. */
const shown = (key: string) => (key.length > 128 ? `${key.slice(0, 128)}…` : key);

function notAllowed(key: string, source: string, problem: string, where = 'options') {
  return RetrievalErrors.make.option_not_allowed({ key: shown(key), source, in: where, problem });
}

/**
 * A count (a cap, a number of messages) is a safe integer ≥ `min`: 1e300 or 2**53 is no count, and would
 * otherwise read as "no cap" wherever a comparison or Math.min meets it.
 */
export const COUNT_PROBLEM = 'a whole number from 1 to 2^53-1';

export const isCount = (value: unknown, min = 1): value is number =>
  Number.isSafeInteger(value) && (value as number) >= min;
/** The dataset's own value of a key; null counts as unset. */
const ownValue = (owner: Settings, key: string) => (Object.hasOwn(owner, key) ? (owner[key] ?? undefined) : undefined);

function narrowed(rule: ReaderOptionRule, key: string, value: unknown, owner: Settings, source: string): unknown {
  const own = ownValue(owner, key);
  switch (rule.kind) {
    case 'choice':
      return value;
    case 'at_most':
      // null leaves the dataset's own cap in force (sources read `options[key] ?? properties[key]`).
      if (value === null) return value;
      // Refused here, for every source alike, with the reason a source gives a malformed option.
      if (!isCount(value)) throw RetrievalErrors.make.source_options_invalid({ option: key, problem: COUNT_PROBLEM });
      return isCount(own) ? Math.min(value, own) : value;
    case 'subset': {
      // A malformed list is the source's to refuse (source_options_invalid); only a wider one is refused here.
      if (!Array.isArray(value) || !Array.isArray(own)) return value;
      const outside = value.find((item) => !own.includes(item));
      if (outside !== undefined)
        throw notAllowed(key, source, `${JSON.stringify(outside)} is not in the dataset's ${key}`);
      return value;
    }
    case 'unpinned': {
      const pinned = (rule.pinnedBy ?? [key]).find((k) => ownValue(owner, k) !== undefined);
      if (pinned !== undefined) throw notAllowed(key, source, `the dataset fixes ${pinned}`);
      return value;
    }
  }
}

/**
 * The reader's options as the source may use them: every key on the
 * source's table, each narrowed against the dataset's properties; any
 * other key is a 422 `option_not_allowed` naming it.
 */
export function readerOptions(
  table: ReaderOptionTable,
  source: string,
  options: Settings,
  properties: Settings,
): Record<string, unknown> {
  // A fresh object of own keys only: nothing reaches the source through a prototype.
  const allowed: Record<string, unknown> = Object.create(null);
  for (const [key, value] of Object.entries(options)) {
    const rule = Object.hasOwn(table, key) ? table[key] : undefined;
    if (!rule) throw notAllowed(key, source, 'a reader may not set this option for this source');
    allowed[key] = narrowed(rule, key, value, properties, source);
  }
  return allowed;
}

/** The text as a JSON object, or null when it is not one (a bare password or token). */
export function jsonObject(raw: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * A credential_override's JSON object with every field among `fields`, or
 * null when the override is not a JSON object (a bare password or token).
 * Any other field (a host, a table, a path …) is a 422 `option_not_allowed`:
 * the override carries credentials only.
 */
export function credentialFields(raw: string, fields: readonly string[], source: string): Settings | null {
  const parsed = jsonObject(raw);
  const stray = Object.keys(parsed ?? {}).find((key) => !fields.includes(key));
  if (stray !== undefined)
    throw notAllowed(stray, source, 'a credential_override carries credentials only', 'credential_override');
  return parsed;
}
