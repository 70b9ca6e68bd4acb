/**
 * The API route table: method + segment patterns, compiled once per
 * routing-config version. `:name` takes one decoded segment; a final
 * `*name` takes the decoded rest (URNs with slashes).
 * Static segments outrank parameters, so `/datasets/by-urn` beats
 * `/datasets/:urn`. A miss that would hit with the trailing slash toggled
 * answers 307, as FastAPI does.
 */
import type { HttpMethod, RouteDef } from '../module.ts';
import type { Stage } from '../pipeline/stage.ts';

/** What routing reads of a definition; service mounts and the RPC adapter compile to one too, with no document. */
export type RoutedDef = Omit<RouteDef, 'doc'>;

export interface CompiledRoute {
  readonly def: RoutedDef;
  readonly segments: readonly Segment[];
  /** Per-route stages after routeMatch, compiled at startup by the plan (gateway/pipeline/plan.ts). */
  readonly stages: readonly Stage[];
  /** The chain a websocket upgrade runs, ending in the mount's hook; null where the route takes no upgrades. */
  readonly upgradeStages: readonly Stage[] | null;
}

type Segment = { kind: 'static'; value: string } | { kind: 'param'; name: string } | { kind: 'rest'; name: string };

export type RouteLookup =
  | { kind: 'match'; route: CompiledRoute; params: Record<string, string> }
  | { kind: 'redirect'; path: string }
  | { kind: 'method_not_allowed'; allowed: string[] }
  | { kind: 'miss' };

export function parsePattern(path: string): Segment[] {
  const parts = path.split('/').slice(1);
  return parts.map((part, index) => {
    if (part.startsWith(':')) return { kind: 'param', name: part.slice(1) };
    if (part.startsWith('*')) {
      if (index !== parts.length - 1) throw new Error(`route ${path}: '*' must be the last segment`);
      return { kind: 'rest', name: part.slice(1) };
    }
    return { kind: 'static', value: part };
  });
}

function specificity(segments: readonly Segment[]): number[] {
  // Compare segment by segment: static (2) > param (1) > rest (0); longer wins ties.
  return [...segments.map((s) => (s.kind === 'static' ? 2 : s.kind === 'param' ? 1 : 0)), segments.length];
}

function compareSpecificity(a: readonly Segment[], b: readonly Segment[]): number {
  const sa = specificity(a);
  const sb = specificity(b);
  for (let i = 0; i < Math.max(sa.length, sb.length); i++) {
    const diff = (sb[i] ?? -1) - (sa[i] ?? -1);
    if (diff !== 0) return diff;
  }
  return 0;
}

export class RouteTable {
  readonly #byMethod = new Map<string, CompiledRoute[]>();

  constructor(routes: readonly CompiledRoute[]) {
    for (const route of routes) {
      const methods = typeof route.def.method === 'string' ? [route.def.method] : route.def.method;
      for (const method of methods as HttpMethod[]) {
        const list = this.#byMethod.get(method) ?? [];
        list.push(route);
        this.#byMethod.set(method, list);
      }
    }
    for (const list of this.#byMethod.values()) list.sort((a, b) => compareSpecificity(a.segments, b.segments));
  }

  lookup(method: string, rawPath: string): RouteLookup {
    const hit = this.#find(method, rawPath);
    if (hit) return hit;
    const allowed = [...this.#byMethod.keys()].filter((m) => m !== method && this.#find(m, rawPath));
    if (allowed.length > 0) return { kind: 'method_not_allowed', allowed };
    if (rawPath !== '/') {
      const toggled = rawPath.endsWith('/') ? rawPath.slice(0, -1) : `${rawPath}/`;
      if (this.#find(method, toggled)) return { kind: 'redirect', path: toggled };
    }
    return { kind: 'miss' };
  }

  #find(method: string, rawPath: string): Extract<RouteLookup, { kind: 'match' }> | null {
    const parts = rawPath.split('/').slice(1);
    const hit = this.#findIn(method, parts);
    // HEAD is GET without a body (RFC 9110 §9.3.2): a path with no HEAD route of its own answers through GET.
    return hit ?? (method === 'HEAD' ? this.#findIn('GET', parts) : null);
  }

  #findIn(method: string, parts: string[]): Extract<RouteLookup, { kind: 'match' }> | null {
    for (const route of this.#byMethod.get(method) ?? []) {
      const params = matchSegments(route.segments, parts);
      if (params) return { kind: 'match', route, params };
    }
    return null;
  }
}

function matchSegments(segments: readonly Segment[], parts: string[]): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] as Segment;
    if (segment.kind === 'rest') return matchRest(segment.name, parts.slice(i), params);
    if (!matchPart(segment, parts[i], params)) return null;
  }
  return parts.length === segments.length ? params : null;
}

/** A `*rest` segment takes the remaining parts, at least one character of them. */
function matchRest(
  name: string,
  rest: readonly string[],
  params: Record<string, string>,
): Record<string, string> | null {
  const joined = rest.join('/');
  if (joined === '') return null;
  params[name] = safeDecode(joined);
  return params;
}

/** A static segment matches its own text; a `:param` any non-empty part, recorded in `params`. */
function matchPart(
  segment: Exclude<Segment, { kind: 'rest' }>,
  part: string | undefined,
  params: Record<string, string>,
): boolean {
  if (part === undefined) return false;
  if (segment.kind === 'static') return part === segment.value;
  if (part === '') return false;
  params[segment.name] = safeDecode(part);
  return true;
}

function safeDecode(value: string): string {
  // canonicalPath already rejected malformed escapes; decode once, never twice.
  return decodeURIComponent(value);
}
