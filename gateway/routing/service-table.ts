/**
 * Which service a path belongs to, from the live routing configuration
 * (default prefixes api=/api, frontend=/,
 * models=/runtime/models, ...). Longest prefix wins; `/` is the catch-all.
 * Rebuilt as a whole and swapped atomically when the config changes.
 */
import type { CompiledRoute, RouteTable } from './router.ts';
import type { RoutingSnapshot } from './source.ts';

export type ServiceResolution = { service: string; rest: string; enabled: boolean };

/** What routeMatch reads of a listener's table: the service of a path, then its API route or its mount. */
export interface RouteResolver {
  resolve(rawPath: string): ServiceResolution | null;
  readonly api: RouteTable;
  readonly mounts: ReadonlyMap<string, CompiledRoute>;
}

export class ServiceTable implements RouteResolver {
  readonly #entries: { service: string; prefix: string; enabled: boolean }[];

  constructor(
    snapshot: RoutingSnapshot,
    readonly api: RouteTable,
    readonly mounts: ReadonlyMap<string, CompiledRoute>,
  ) {
    this.#entries = Object.entries(snapshot.prefixes)
      .map(([service, prefix]) => ({ service, prefix, enabled: snapshot.enabled[service] !== false }))
      .sort((a, b) => b.prefix.length - a.prefix.length);
  }

  resolve(rawPath: string): ServiceResolution | null {
    for (const { service, prefix, enabled } of this.#entries) {
      if (prefix === '/') return { service, rest: rawPath, enabled };
      if (rawPath === prefix || rawPath.startsWith(`${prefix}/`)) {
        return { service, rest: rawPath.slice(prefix.length) || '/', enabled };
      }
    }
    return null;
  }
}
