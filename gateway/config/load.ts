/**
 * loadConfig(): defaults ← JSON file ← environment ← explicit overrides
 * (CLI flags), validated once with every problem listed, then frozen.
 * Semantic checks the schema cannot express live in verifyConfig().
 */
import { readFileSync } from 'node:fs';
import { BlockList, isIPv6 } from 'node:net';
import { hostOfUrl } from '../http/origin.ts';
import { type Config, type ConfigInput, configSchema, ENV_NAMES } from './schema.ts';
import { ACME_NAME } from './tls-schema.ts';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export interface LoadConfigOptions {
  env?: Record<string, string | undefined>;
  /** Path of a JSON config file; `PLATFORM_CONFIG_FILE` when omitted. */
  file?: string | undefined;
  /** Highest precedence (CLI flags, tests). */
  overrides?: ConfigInput;
}

type Tree = Record<string, unknown>;

export function loadConfig(options: LoadConfigOptions = {}): Readonly<Config> {
  const env = options.env ?? process.env;
  const problems: string[] = [];
  const merged: Tree = {};
  const file = options.file ?? env.PLATFORM_CONFIG_FILE;
  if (file) deepMerge(merged, readConfigFile(file, problems));
  deepMerge(merged, fromEnv(env, problems));
  if (options.overrides) deepMerge(merged, options.overrides as Tree);
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(`${issue.path.join('.') || '(root)'}: ${issue.message}`);
  } else {
    problems.push(...verifyConfig(parsed.data));
  }
  if (problems.length > 0 || !parsed.success) throw new ConfigError(problems);
  return deepFreeze(parsed.data);
}

/** Cross-field rules (OpenFGA's Verify): origin agreement, TLS file pairs. */
export function verifyConfig(config: Config): string[] {
  const problems: string[] = [];
  if ((config.tlsCertFile === null) !== (config.tlsKeyFile === null)) {
    problems.push('tlsCertFile/tlsKeyFile: give both or neither');
  }
  if (config.externalUrl && config.origin && new URL(config.externalUrl).origin !== config.origin.replace(/\/$/, '')) {
    problems.push(
      `origin: PLATFORM_ORIGIN (${config.origin}) must equal the ` +
        `origin of PLATFORM_EXTERNAL_URL ` +
        `(${new URL(config.externalUrl).origin})`,
    );
  }
  for (const [key, value] of [
    ['externalUrl', config.externalUrl],
    ['origin', config.origin],
  ] as const) {
    if (!value) continue;
    const host = hostOfUrl(value);
    if (!config.hostnames.includes(host) && host !== config.bind) {
      problems.push(
        `${key}: host '${host}' is not one of hostnames ` +
          `(${config.hostnames.join(', ')}), so the certificate would ` +
          `not match`,
      );
    }
  }
  if (metricsOpenOffLoopback(config.admin) && !config.admin.allowUnauthenticatedMetrics) {
    problems.push(
      `admin.metricsToken: the admin listener binds '${config.admin.bind}' (PLATFORM_ADMIN_BIND), which is not ` +
        'loopback, so /metrics needs a token: set PLATFORM_METRICS_TOKEN, or ' +
        'PLATFORM_ALLOW_UNAUTHENTICATED_METRICS=true to serve it to anyone who reaches that address',
    );
  }
  problems.push(...acmeProblems(config));
  if (config.jobs.runtime === 'ray' && config.jobs.ray.dashboardUrl === null) {
    problems.push('jobs.ray.dashboardUrl: required when jobs.runtime is ray (PLATFORM_RAY_DASHBOARD_URL)');
  }
  if (config.jobs.pythonPackages.catalogFile !== null && config.jobs.pythonPackages.wheelDir === null) {
    problems.push('jobs.pythonPackages.wheelDir: required when a package catalog is configured');
  }
  return problems;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** `localhost`, 127.0.0.0/8 or ::1 (IPv4-mapped included, RFC 4291 §2.5.5.2); any other address or name is not. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  try {
    return LOOPBACK.check(host, isIPv6(host) ? 'ipv6' : 'ipv4');
  } catch {
    // Not an address (a host name other than localhost): it may resolve to anything.
    return false;
  }
}

/** The admin listener is configured to serve /metrics with no token on an address other hosts may reach. */
export function metricsOpenOffLoopback(admin: Config['admin']): boolean {
  return admin.port !== null && admin.metricsToken === null && !isLoopbackHost(admin.bind);
}

function readConfigFile(path: string, problems: string[]): Tree {
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Tree;
    problems.push(`config file ${path}: must hold a JSON object`);
  } catch (error) {
    problems.push(`config file ${path}: ${(error as Error).message}`);
  }
  return {};
}

type EnvKind = (typeof ENV_NAMES)[string]['kind'];

/** One environment value in the type its setting takes, or the problem that stops start. */
function envValue(name: string, raw: string, kind: EnvKind): { value: unknown } | { problem: string } {
  switch (kind) {
    case 'csv':
      return {
        value: raw
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      };
    case 'boolean':
      if (!/^(true|false|1|0)$/i.test(raw)) return { problem: `${name}: '${raw}' is not a boolean (true/false)` };
      return { value: /^(true|1)$/i.test(raw) };
    case 'nullable-number':
    case 'number': {
      if (kind === 'nullable-number' && raw === 'none') return { value: null };
      const value = Number(raw);
      return Number.isFinite(value) ? { value } : { problem: `${name}: '${raw}' is not a number` };
    }
    default:
      return { value: raw };
  }
}

function fromEnv(env: Record<string, string | undefined>, problems: string[]): Tree {
  const tree: Tree = {};
  for (const [name, { path, kind }] of Object.entries(ENV_NAMES)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const parsed = envValue(name, raw, kind);
    if ('problem' in parsed) problems.push(parsed.problem);
    else setPath(tree, path, parsed.value);
  }
  return tree;
}

/** Sets a nested key, creating the objects on the way (env names and flags map to key paths). */
export function setPath(tree: Tree, path: readonly string[], value: unknown): void {
  let node = tree;
  for (const key of path.slice(0, -1)) {
    node[key] ??= {};
    node = node[key] as Tree;
  }
  node[path[path.length - 1] as string] = value;
}

function deepMerge(target: Tree, source: Tree): void {
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    const prior = target[key];
    if (isPlainObject(value) && isPlainObject(prior)) deepMerge(prior, value);
    else target[key] = isPlainObject(value) ? structuredClone(value) : value;
  }
}

function isPlainObject(value: unknown): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepFreeze<T>(value: T): Readonly<T> {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** What ACME cannot order: the operator's own files beside it, or a deployment domain no public CA validates. */
function acmeProblems(config: Config): string[] {
  if (config.tls.acme.directoryUrl === null) return [];
  const problems: string[] = [];
  if (config.tlsCertFile !== null) {
    problems.push(
      'tls.acme.directoryUrl: give either ACME or tlsCertFile/tlsKeyFile (PLATFORM_TLS_CERT_FILE), not both',
    );
  }
  const domain = config.hostnames[0]?.toLowerCase() ?? '';
  if (!ACME_NAME.test(domain)) {
    problems.push(
      `hostnames: the deployment domain '${domain}' cannot be ordered over ACME (a public DNS name, no IP ` +
        'address or wildcard, is needed)',
    );
  }
  return problems;
}
