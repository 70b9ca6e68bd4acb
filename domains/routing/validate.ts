/**
 * Validates a whole routing table before it goes live (traefik):
 * every problem is reported, and a table with any problem is never applied.
 */
import { problemWithPath } from '../../gateway/pipeline/stages/canonical-path.ts';

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

export interface RoutingTable {
  baseHost: string;
  prefixes: Record<string, string>;
  enabled: Record<string, boolean>;
}

export function routingProblems(table: RoutingTable): string[] {
  const problems: string[] = [];
  problems.push(...baseHostProblems(table.baseHost));
  for (const [service, prefix] of Object.entries(table.prefixes)) {
    if (!SERVICES.includes(service)) problems.push(`service_prefixes.${service}: unknown service (known: ${SERVICES.join(', ')})`);
    if (service === 'frontend') {
      if (prefix !== '/') problems.push(`service_prefixes.frontend: must be '/' (the catch-all)`);
      continue;
    }
    if (!/^\/[A-Za-z0-9._~\-/]*[A-Za-z0-9._~-]$/.test(prefix) || problemWithPath(prefix)) {
      problems.push(
        `service_prefixes.${service}: '${prefix}' must start with '/', not end with '/', and hold only unreserved characters in canonical segments`,
      );
    }
  }
  const entries = Object.entries(table.prefixes).filter(([service]) => service !== 'frontend');
  for (let i = 0; i < entries.length; i++) {
    for (let j = i + 1; j < entries.length; j++) {
      const [a, pa] = entries[i] as [string, string];
      const [b, pb] = entries[j] as [string, string];
      if (pa === pb || pa.startsWith(`${pb}/`) || pb.startsWith(`${pa}/`)) {
        problems.push(`service_prefixes: '${a}' (${pa}) and '${b}' (${pb}) overlap`);
      }
    }
  }
  for (const service of Object.keys(table.enabled)) {
    if (!SERVICES.includes(service)) problems.push(`enabled_services.${service}: unknown service`);
  }
  if (table.enabled.api === false) problems.push('enabled_services.api: the platform API cannot be disabled (it serves this endpoint)');
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
