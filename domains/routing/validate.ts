/**
 * Validates a whole routing table before it goes live (traefik):
 * every problem is reported, and a table with any problem is never applied.
 */
import { problemWithPath } from '../../gateway/http/path-problem.ts';

/** The services and their default prefixes (docs/wire.md, routing). */
export const DEFAULT_PREFIXES: Readonly<Record<string, string>> = {
  api: '/api',
  frontend: '/',
  models: '/runtime/models',
  apps: '/runtime/apps',
  tools: '/runtime/tools',
  notebooks: '/notebooks',
  admin_compute: '/admin/compute',
};

/** Administrative paths are off unless intentionally enabled: they are not part of the public runtime pattern. */
export const DEFAULT_ENABLED: Readonly<Record<string, boolean>> = {
  api: true,
  frontend: true,
  models: true,
  apps: true,
  tools: true,
  notebooks: true,
  admin_compute: false,
};

export const SERVICES = Object.keys(DEFAULT_PREFIXES);

/**
 * Paths the gateway serves itself under the frontend's `/`, whatever the table says: sign-in (`/login`,
 * `/login/session`), sign-out (domains/serving/frontend.ts) and the operator console (domains/serving/console/). A
 * service given one of them, or a path below or above one, would take them over: the login page, the session
 * cookie's endpoint or sign-out would reach an upstream (or answer 404) instead.
 */
export const GATEWAY_PATHS: readonly string[] = ['/login', '/logout', '/console'];

export interface RoutingTable {
  baseHost: string;
  prefixes: Record<string, string>;
  enabled: Record<string, boolean>;
}

export function routingProblems(table: RoutingTable): string[] {
  return [
    ...baseHostProblems(table.baseHost),
    ...Object.entries(table.prefixes).flatMap(([service, prefix]) => prefixProblems(service, prefix)),
    ...overlapProblems(table.prefixes),
    ...enabledProblems(table.enabled),
  ];
}

/** A known service; the frontend is the catch-all `/`; any other prefix is a canonical path not ending in `/`. */
function prefixProblems(service: string, prefix: string): string[] {
  const problems: string[] = [];
  if (!SERVICES.includes(service))
    problems.push(`service_prefixes.${service}: unknown service (known: ${SERVICES.join(', ')})`);
  if (service === 'frontend') {
    if (prefix !== '/') problems.push(`service_prefixes.frontend: must be '/' (the catch-all)`);
  } else if (!/^\/[A-Za-z0-9._~\-/]*[A-Za-z0-9._~-]$/.test(prefix) || problemWithPath(prefix)) {
    problems.push(
      `service_prefixes.${service}: '${prefix}' must start with '/', not end with '/', and hold only unreserved ` +
        `characters in canonical segments`,
    );
  } else {
    const taken = GATEWAY_PATHS.find((own) => nested(prefix, own));
    if (taken !== undefined)
      problems.push(`service_prefixes.${service}: '${prefix}' would take '${taken}', which the gateway serves itself`);
  }
  return problems;
}

/** Whether `a` and `b` are the same path or one lies below the other, by whole segments. */
function nested(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

/** Two services may not share a prefix or nest one in the other (the frontend's `/` aside). */
function overlapProblems(prefixes: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  const entries = Object.entries(prefixes).filter(([service]) => service !== 'frontend');
  entries.forEach(([a, pa], i) => {
    for (const [b, pb] of entries.slice(i + 1)) {
      if (nested(pa, pb)) problems.push(`service_prefixes: '${a}' (${pa}) and '${b}' (${pb}) overlap`);
    }
  });
  return problems;
}

function enabledProblems(enabled: Readonly<Record<string, boolean>>): string[] {
  const problems = Object.keys(enabled)
    .filter((service) => !SERVICES.includes(service))
    .map((service) => `enabled_services.${service}: unknown service`);
  if (enabled.api === false)
    problems.push('enabled_services.api: the platform API cannot be disabled (it serves this endpoint)');
  return problems;
}

function baseHostProblems(baseHost: string): string[] {
  let url: URL;
  try {
    url = new URL(baseHost);
  } catch {
    return [`base_host: '${baseHost}' is not a URL`];
  }
  const problems: string[] = [];
  if (url.protocol !== 'https:') problems.push(`base_host: must be an https:// origin, got ${url.protocol}`);
  if (url.pathname !== '/' || url.search || url.hash || url.username || url.password) {
    problems.push('base_host: must be an origin only (no path, query, fragment or credentials)');
  }
  return problems;
}
