/**
 * Catalog URNs and the raw-path split of the v2 addressing
 * form (docs/catalog.md). URNs are opaque keys once built: names are kept verbatim
 * (slashes, parentheses, commas, `%`, `+`, unicode), so a URN is parsed back
 * only by the fixed parts around the name — the platform and the
 * environment, which the create bodies restrict to [A-Za-z0-9_.-].
 */

export const DATASET_PREFIX = 'urn:li:dataset:';
export const CONTAINER_PREFIX = 'urn:li:container:';
export const SECRET_PREFIX = 'urn:li:dataHubSecret:';
const PLATFORM_PREFIX = 'urn:li:dataPlatform:';

/** Platform and environment tokens: no `,` `(` `)` `/`, so the name between them is unambiguous. */
export const TOKEN_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

export interface UrnParts {
  platform: string;
  name: string;
  environment: string;
}

function build(prefix: string, parts: UrnParts): string {
  return `${prefix}(${PLATFORM_PREFIX}${parts.platform},${parts.name},${parts.environment})`;
}

function parse(prefix: string, urn: string): UrnParts | null {
  const head = `${prefix}(${PLATFORM_PREFIX}`;
  if (!urn.startsWith(head) || !urn.endsWith(')')) return null;
  const body = urn.slice(head.length, -1);
  const first = body.indexOf(',');
  const last = body.lastIndexOf(',');
  if (first < 0 || last <= first) return null;
  const parts = {
    platform: body.slice(0, first),
    name: body.slice(first + 1, last),
    environment: body.slice(last + 1),
  };
  return TOKEN_PATTERN.test(parts.platform) && TOKEN_PATTERN.test(parts.environment) ? parts : null;
}

/** `urn:li:dataset:(urn:li:dataPlatform:<platform>,<name>,<ENV>)`. */
export const datasetUrn = (parts: UrnParts): string => build(DATASET_PREFIX, parts);
export const parseDatasetUrn = (urn: string): UrnParts | null => parse(DATASET_PREFIX, urn);

/** `urn:li:container:(urn:li:dataPlatform:<platform|"platform">,<name>,PROD)`, the DataHub container form. */
export const containerUrn = (platform: string, name: string): string =>
  build(CONTAINER_PREFIX, { platform, name, environment: 'PROD' });
export const parseContainerUrn = (urn: string): UrnParts | null => parse(CONTAINER_PREFIX, urn);

/** `urn:li:dataHubSecret:<name>`, the DataHub secret form. */
export const secretUrn = (name: string): string => `${SECRET_PREFIX}${name}`;
export function parseSecretUrn(urn: string): string | null {
  return urn.startsWith(SECRET_PREFIX) && urn.length > SECRET_PREFIX.length ? urn.slice(SECRET_PREFIX.length) : null;
}

export interface V2Target {
  /** The decoded URN. */
  urn: string;
  /** The sub-resource keyword (`schema`, `datasets`) when the path names one. */
  sub: string | null;
  /** Decoded path after the keyword (a member dataset URN), or null. */
  rest: string | null;
}

/**
 * Splits the raw (still percent-encoded) tail after `/v2/` into URN and
 * sub-resource. The tail is decoded exactly once, so a URN may come raw or
 * percent-encoded; a URN holding a literal `%`, `//` or `?` must come
 * encoded. The keyword is recognized only as an unencoded segment:
 *
 * - `last`: the keyword must be the final raw segment (dataset `/schema`).
 *   Dataset URNs we build always end in `,<ENV>)`, so a dataset URN never
 *   ends in `/schema` and the split is never ambiguous.
 * - `balanced`: the first keyword segment whose decoded prefix has balanced
 *   parentheses (container `/datasets[/<dataset urn>]`). A container name
 *   with unbalanced parentheses and a raw `/datasets/` inside must be sent
 *   percent-encoded.
 *
 * Anything else, including `%2F`-encoded keywords, is part of the URN.
 */
export function splitV2Tail(rawTail: string, keyword: string, mode: 'last' | 'balanced'): V2Target {
  const parts = rawTail.split('/');
  const whole = { urn: decodeURIComponent(rawTail), sub: null, rest: null };
  if (mode === 'last') {
    if (parts.length < 2 || parts[parts.length - 1] !== keyword) return whole;
    return { urn: decodeURIComponent(parts.slice(0, -1).join('/')), sub: keyword, rest: null };
  }
  let depth = 0;
  for (let i = 0; i < parts.length - 1; i++) {
    depth += parenBalance(decodeURIComponent(parts[i] as string));
    if (depth === 0 && parts[i + 1] === keyword) {
      const rest = parts.slice(i + 2).join('/');
      return {
        urn: decodeURIComponent(parts.slice(0, i + 1).join('/')),
        sub: keyword,
        rest: rest === '' ? null : decodeURIComponent(rest),
      };
    }
  }
  return whole;
}

function parenBalance(text: string): number {
  let n = 0;
  for (const ch of text) {
    if (ch === '(') n++;
    else if (ch === ')') n--;
  }
  return n;
}

/**
 * A copy of `value` (dataset properties) with every secret reference — any
 * string starting `urn:li:dataHubSecret:`, at any depth — replaced by
 * `replace(reference)`. The JSON round trip visits every value however deep
 * (properties arrived as JSON and are stored as JSON), so no reference can
 * hide below a depth limit.
 */
export function mapSecretReferences<T>(value: T, replace: (reference: string) => string): T {
  const isReference = (item: unknown): item is string => typeof item === 'string' && item.startsWith(SECRET_PREFIX);
  return JSON.parse(JSON.stringify(value), (_key, item: unknown) => (isReference(item) ? replace(item) : item)) as T;
}

/** Secret URNs held anywhere in a connector's properties (strings only, any depth). */
export function secretReferences(value: unknown): Set<string> {
  const found = new Set<string>();
  mapSecretReferences(value, (reference) => {
    found.add(reference);
    return reference;
  });
  return found;
}

const BOUND_SUFFIX = /#([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/**
 * A reference as handed to a connector for one use: the reference as written
 * plus `#<secret id>` of the secret it was bound to. The catalog writes every
 * reference of a dataset in this form before a connector sees the properties,
 * so the id is always the last `#…` part, whatever the secret's name holds.
 */
export const boundSecretReference = (reference: string, secretId: string): string => `${reference}#${secretId}`;

export function parseBoundSecretReference(text: string): { reference: string; secretId: string } | null {
  const match = text.startsWith(SECRET_PREFIX) ? BOUND_SUFFIX.exec(text) : null;
  return match ? { reference: text.slice(0, match.index), secretId: match[1] as string } : null;
}
