/**
 * The settings an operator of `meshgate serve` sets: each flag and PLATFORM_*
 * environment variable, with its default and meaning. `serve --help` is
 * rendered from this table and README's "Operating it" table holds the same
 * rows (renderMarkdownRow); test/unit/app/cli/settings.test.ts keeps both in step
 * with every variable the config loader reads. Defaults come from the config
 * schema itself, so they cannot drift either.
 */
import { type Config, configSchema, ENV_NAMES } from '../../gateway/config/schema.ts';

export interface ServeSetting {
  /** The `meshgate` flag that sets the first variable, when there is one. */
  readonly flag?: string;
  /** The placeholder of the flag's value in the synopsis. */
  readonly value?: string;
  readonly env: readonly string[];
  readonly meaning: string;
  /** What an unset (null) default means, per variable, when "none" would mislead. */
  readonly unset?: string;
  /** The docs page that explains the setting further. */
  readonly doc?: string;
}

/** Read by loadConfig() directly rather than mapped to a key: it names the JSON file of settings. */
export const CONFIG_FILE_ENV = 'PLATFORM_CONFIG_FILE';

export const SERVE_SETTINGS: readonly ServeSetting[] = [
  { flag: 'data-dir', value: 'DIR', env: ['PLATFORM_DATA_DIR'], meaning: 'database, keys, TLS material' },
  {
    flag: 'database',
    value: 'URL',
    env: ['PLATFORM_DATABASE_URL'],
    meaning: 'PostgreSQL shared by the nodes of a cluster (`postgres://…`); unset = SQLite in the data dir',
    unset: 'SQLite in the data dir',
    doc: 'docs/operating.md',
  },
  {
    flag: 'node-key-file',
    value: 'FILE',
    env: ['PLATFORM_NODE_KEY_FILE'],
    meaning: 'on PostgreSQL: 32-byte key sealing the cluster identity in the database, the same on every node',
    doc: 'docs/operating.md',
  },
  {
    env: ['PLATFORM_NODE_KEY'],
    meaning: 'the node key itself (base64), instead of the file',
    doc: 'docs/operating.md',
  },
  {
    flag: 'https-port',
    value: 'PORT',
    env: ['PLATFORM_HTTPS_PORT'],
    meaning: 'HTTPS (HTTP/2 + HTTP/1.1); `0` picks a free port',
  },
  {
    flag: 'http-port',
    value: 'PORT',
    env: ['PLATFORM_HTTP_PORT'],
    meaning: 'optional plain-HTTP listener for local development',
  },
  { flag: 'bind', value: 'ADDR', env: ['PLATFORM_BIND'], meaning: 'listen address' },
  {
    flag: 'hostname',
    value: 'NAME',
    env: ['PLATFORM_HOSTNAMES'],
    meaning: 'certificate names and SNI; the first is the deployment domain (flag repeats, variable comma-separated)',
  },
  { flag: 'cluster-name', value: 'NAME', env: ['PLATFORM_CLUSTER_NAME'], meaning: "this cluster's display name" },
  {
    flag: 'log-level',
    value: 'LEVEL',
    env: ['PLATFORM_LOG_LEVEL'],
    meaning: 'pino level: fatal, error, warn, info, debug, trace or silent',
  },
  {
    flag: 'workers',
    value: 'N|auto',
    env: ['PLATFORM_WORKERS'],
    meaning: 'serving processes; above 1 a primary supervises them and owns the once-only work (`auto`: one per core)',
    doc: 'docs/operating.md',
  },
  {
    env: ['PLATFORM_WORKER_LISTEN'],
    meaning:
      'how workers share the ports: `reuseport` (a socket each, kernel-balanced) ' +
      'or `shared` (the primary hands out connections)',
    doc: 'docs/operating.md',
  },
  {
    flag: 'config',
    value: 'FILE',
    env: [CONFIG_FILE_ENV],
    meaning:
      'JSON file of settings, each under its key (`serve --help` names it, e.g. `jobs.maxConcurrent` is ' +
      '`{"jobs": {"maxConcurrent": 4}}`); `meshgate validate` checks it',
  },
  {
    env: ['PLATFORM_BOOTSTRAP_ADMIN_USERNAME', 'PLATFORM_BOOTSTRAP_ADMIN_PASSWORD'],
    unset: 'generated',
    meaning: "first start's admin, and its password for scripted installs (else generated, printed once listening)",
  },
  {
    env: ['PLATFORM_EXTERNAL_URL', 'PLATFORM_ORIGIN'],
    unset: 'derived',
    meaning: 'public URL and origin; start refuses them unless they agree and name a certificate host',
  },
  {
    env: ['PLATFORM_TLS_CERT_FILE', 'PLATFORM_TLS_KEY_FILE'],
    unset: 'issued',
    meaning: "an operator certificate instead of the platform CA's; rewritten files (or SIGHUP) rotate it live",
    doc: 'docs/operating.md',
  },
  {
    env: ['PLATFORM_ACME_DIRECTORY_URL'],
    unset: 'off',
    meaning: "ACME directory the public certificate is ordered and renewed from (try the CA's staging one first)",
    doc: 'docs/operating.md',
  },
  {
    env: ['PLATFORM_ACME_CONTACT', 'PLATFORM_ACME_NAMES'],
    meaning: 'ACME: account e-mail addresses; names ordered besides the deployment domain (comma-separated)',
    doc: 'docs/operating.md',
  },
  {
    env: ['PLATFORM_ACME_HTTP_PORT'],
    meaning: 'ACME HTTP-01 listener: answers pending tokens only, redirects the rest to https',
    doc: 'docs/operating.md',
  },
  {
    env: ['PLATFORM_ACME_DIRECTORY_CA_FILE'],
    unset: "the system's roots",
    meaning: "roots the ACME directory's HTTPS certificate is verified with",
    doc: 'docs/operating.md',
  },
  { env: ['PLATFORM_HANDSHAKE_TIMEOUT_MS'], meaning: 'a connection must finish its TLS handshake in time' },
  {
    env: ['PLATFORM_HEADERS_TIMEOUT_MS', 'PLATFORM_REQUEST_TIMEOUT_MS'],
    meaning:
      'absolute deadline for an HTTP/1.1 request head (from its first byte; 408 and close), ' +
      'and for the whole request; ' +
      'an HTTP/2 session must open its first stream within the head deadline',
  },
  { env: ['PLATFORM_IDLE_TIMEOUT_MS'], meaning: 'any connection idle that long is closed' },
  { env: ['PLATFORM_MAX_CONCURRENT_STREAMS'], meaning: 'HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS` (RFC 9113 §6.5.2)' },
  {
    env: ['PLATFORM_MAX_HEADER_COUNT', 'PLATFORM_MAX_HEADER_BYTES'],
    meaning: 'most request headers, and most header bytes in all (431 beyond)',
  },
  { env: ['PLATFORM_MAX_BODY_BYTES'], meaning: 'most bytes of a buffered API request body (413 beyond)' },
  {
    env: ['PLATFORM_UPSTREAM_CONNECTIONS', 'PLATFORM_UPSTREAM_MAX_CONCURRENT', 'PLATFORM_UPSTREAM_QUEUE_TIMEOUT_MS'],
    meaning:
      'runtime proxy pool per upstream replica, requests in flight per deployment and process (fairly shared ' +
      'when full), and the longest wait for one',
    doc: 'docs/serving.md',
  },
  {
    env: ['PLATFORM_FRONTEND_UPSTREAM'],
    unset: 'built-in',
    meaning: 'proxy the frontend (`/`) to this origin instead of the built-in home page',
  },
  {
    env: ['PLATFORM_NOTEBOOKS_UPSTREAM', 'PLATFORM_ADMIN_COMPUTE_UPSTREAM'],
    meaning: 'upstreams of `/notebooks` and `/admin/compute` (administrators only) when those services are enabled',
  },
  {
    env: ['PLATFORM_UPSTREAM_HEALTH_INTERVAL_MS'],
    meaning:
      'how often the primary probes each replica of every deployment (ejecting failing ones; the deployments API ' +
      'shows the last result)',
    doc: 'docs/serving.md',
  },
  {
    env: ['PLATFORM_SERVING_LEGACY_PORTS'],
    meaning: "legacy: serve a deployment's `legacy_port` on its own HTTPS listener",
    doc: 'docs/serving.md',
  },
  { env: ['PLATFORM_ACCESS_TOKEN_TTL_SECONDS'], meaning: 'lifetime of access tokens' },
  {
    env: ['PLATFORM_ADMIN_PORT', 'PLATFORM_ADMIN_BIND'],
    meaning: 'admin listener (plain HTTP) serving Prometheus `/metrics`; keep it on loopback or a management network',
    doc: 'docs/observability.md',
  },
  {
    env: ['PLATFORM_METRICS_TOKEN'],
    meaning: 'bearer token `/metrics` requires (at least 16 characters); required on a non-loopback admin bind',
    doc: 'docs/observability.md',
  },
  {
    env: ['PLATFORM_ALLOW_UNAUTHENTICATED_METRICS'],
    meaning: 'serve `/metrics` with no token on a non-loopback admin bind anyway (a warning is logged at start)',
    doc: 'docs/observability.md',
  },
  {
    env: ['PLATFORM_OTLP_ENDPOINT'],
    unset: 'off',
    meaning: 'OTLP/HTTP traces endpoint; set, spans are recorded and exported',
    doc: 'docs/observability.md',
  },
  {
    env: ['PLATFORM_SECRETS_KEK_DIR'],
    unset: '<data-dir>/keys/kek',
    meaning: "the catalog's key-encryption keys; keep them off the database's disk in production",
    doc: 'docs/catalog.md',
  },
  {
    env: ['PLATFORM_ALLOW_UNTRUSTED_FEDERATION'],
    meaning: 'allow new `peer_kc` (source-trusted) federations',
    doc: 'docs/federation.md',
  },
  {
    env: ['PLATFORM_FEDERATION_RECONCILE_INTERVAL_SECONDS'],
    meaning: 'each PAIRED record is pinged once per interval (jittered); `0` never',
    doc: 'docs/federation.md',
  },
  {
    env: ['PLATFORM_FEDERATION_DELETED_RETENTION_DAYS'],
    meaning: 'DELETED federation records are purged this many days after their deletion',
    doc: 'docs/federation.md',
  },
  {
    env: ['PLATFORM_FEDERATION_FILE'],
    unset: 'none',
    meaning: 'a declared federation set (`meshgate federation apply` format) applied at start',
    doc: 'docs/federation.md',
  },
  {
    env: ['PLATFORM_TRUSTED_SHARED_ISSUERS'],
    meaning: 'issuer URLs (comma-separated) of shared realms whose tokens mesh ingress accepts',
    doc: 'docs/mesh.md',
  },
  {
    env: ['PLATFORM_RETRIEVAL_FS_ROOTS'],
    meaning: 'folders (comma-separated) filesystem datasets may live under; none refuses filesystem retrieval',
    doc: 'docs/retrieval.md',
  },
  {
    env: ['PLATFORM_RETRIEVAL_S3_ENDPOINT_HOSTS'],
    meaning:
      "hosts (`host` or `host:port`, comma-separated) an S3 job's credential_override may name as its endpoint " +
      "besides the dataset's own; none = the dataset's own only",
    doc: 'docs/sources.md',
  },
  {
    env: ['PLATFORM_RETRIEVAL_INLINE_THRESHOLD_BYTES'],
    meaning: 'largest JSON result answered inline; `auto` streams over SSE beyond it',
  },
  {
    env: ['PLATFORM_RETRIEVAL_FLIGHT_ENDPOINTS_MAX'],
    meaning: 'most endpoints an Arrow Flight GetFlightInfo splits a PostgreSQL table read into (parallel reads)',
    doc: 'docs/retrieval.md',
  },
  {
    env: ['PLATFORM_MESH_PROXY_READ_TIMEOUT_SECONDS', 'PLATFORM_MESH_PROXY_RUNTIME_READ_TIMEOUT_SECONDS'],
    meaning: 'mesh egress wait for the peer on `/api` paths and on `/runtime` paths (504 beyond)',
  },
  {
    env: ['PLATFORM_MESH_SIGNATURE_TTL_SECONDS', 'PLATFORM_MESH_SIGNATURE_FUTURE_SKEW_SECONDS'],
    meaning: 'oldest, and furthest-ahead, mesh signature accepted',
  },
  {
    env: ['PLATFORM_MESH_FEATURES'],
    meaning: 'mesh hardening offered at pairing (comma-separated)',
    doc: 'docs/mesh.md',
  },
  {
    env: ['PLATFORM_JOBS_RUNTIME', 'PLATFORM_RAY_DASHBOARD_URL'],
    meaning: 'the embedded `local` process runner, or `ray` through the Jobs API of that dashboard',
    doc: 'docs/jobs.md',
  },
  { env: ['PLATFORM_JOBS_MAX_CONCURRENT'], meaning: 'local jobs running at once; more wait PENDING' },
  { env: ['PLATFORM_JOBS_LOG_RETENTION_SECONDS'], meaning: 'how long a finished job keeps its logs' },
  {
    env: ['PLATFORM_JOBS_PACKAGE_CATALOG', 'PLATFORM_JOBS_WHEEL_DIR'],
    meaning: 'approved Python packages (JSON) and the folder of their wheels',
    doc: 'docs/jobs.md',
  },
  {
    env: ['PLATFORM_JOBS_SANDBOX'],
    meaning: 'local jobs run in a bubblewrap sandbox (`bwrap`); `none` turns it off and is unsafe',
    doc: 'docs/jobs.md',
  },
  {
    env: ['PLATFORM_JOBS_NETWORK'],
    meaning: "sandboxed jobs share the host's network (`host`), or each has its own and reaches nothing (`none`)",
    doc: 'docs/jobs.md',
  },
];

let defaults: Config | null = null;

/** The configuration's defaults, parsed on first use: help and the settings doc show them, a start does not. */
function configDefaults(): Config {
  defaults ??= configSchema.parse({});
  return defaults;
}

/** A default as an operator would type it (literal), or what leaving the variable unset means (not literal). */
interface ShownDefault {
  text: string;
  literal: boolean;
}

/** The default of each of the row's variables; equal ones are stated once. */
function settingDefaults(setting: ServeSetting): ShownDefault[] {
  const shown = setting.env.map((name): ShownDefault => {
    const spec = ENV_NAMES[name];
    const value =
      spec?.path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], configDefaults()) ?? null;
    const unset = value === null || (Array.isArray(value) && value.length === 0);
    if (unset) return { text: setting.unset ?? 'none', literal: false };
    return { text: Array.isArray(value) ? value.join(',') : String(value), literal: true };
  });
  return shown.filter((value, i) => shown.findIndex((other) => other.text === value.text) === i);
}

/** One row of README's table: | flag | env | default | meaning |. */
export function renderMarkdownRow(setting: ServeSetting): string {
  const code = (text: string) => `\`${text}\``;
  const flag = setting.flag ? code(`--${setting.flag}`) : '';
  // A placeholder such as <data-dir> would read as an HTML tag outside a code span.
  const defaults = settingDefaults(setting).map((d) => (d.literal || d.text.includes('<') ? code(d.text) : d.text));
  const doc = setting.doc ? ` ([${setting.doc}](${setting.doc}))` : '';
  const cells = [flag, setting.env.map(code).join(', '), defaults.join(', '), `${setting.meaning}${doc}`];
  return `|${cells.map((cell) => (cell ? ` ${cell} ` : ' ')).join('|')}|`;
}

/** The settings part of `serve --help`: flag and variables, default, then the meaning indented. */
export function renderHelp(): string {
  return SERVE_SETTINGS.map((setting) => {
    // Each variable's key in the --config file too: the file is how an installed executable's user sets the rest.
    const keys = setting.env.flatMap((env) => (ENV_NAMES[env] ? [`"${ENV_NAMES[env].path.join('.')}"`] : []));
    const names = [...(setting.flag ? [`--${setting.flag}`] : []), ...setting.env, ...keys].join(', ');
    const defaults = settingDefaults(setting).map((d) => d.text);
    const doc = setting.doc ? ` (${setting.doc})` : '';
    return `  ${names}  [default: ${defaults.join(', ')}]\n      ${setting.meaning.replaceAll('`', '')}${doc}`;
  }).join('\n');
}
