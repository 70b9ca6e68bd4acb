/**
 * The single source of meshgate's configuration: type, defaults,
 * descriptions and `PLATFORM_*` env names. `loadConfig()` merges defaults,
 * an optional JSON file and the environment/flags, validates with unknown
 * keys rejected, reports every problem by key path, and deep-freezes.
 */
import { z } from 'zod';
import { authSettings } from './auth-schema.ts';
import { databaseSetting, nodeKeyFileSetting, nodeKeySetting, nodesSettings } from './cluster-schema.ts';
import { federationSettings } from './federation-schema.ts';
import { jobsSettings } from './jobs-schema.ts';
import { limitsSettings } from './limits-schema.ts';
import { meshSettings } from './mesh-schema.ts';
import { retrievalSettings } from './retrieval-schema.ts';
import { servingSettings } from './serving-schema.ts';
import { tlsSettings } from './tls-schema.ts';

const port = z.number().int().min(0).max(65535);
const csv = z.array(z.string().min(1));

export const configSchema = z.strictObject({
  dataDir: z.string().min(1).default('data/var').describe('Folder for the SQLite database, keys and TLS material.'),
  database: databaseSetting,
  nodeKeyFile: nodeKeyFileSetting,
  nodeKey: nodeKeySetting,
  httpsPort: port.default(8443).describe('HTTPS (HTTP/2 + HTTP/1.1) listener port; 0 picks a free port.'),
  httpPort: port.nullable().default(null).describe('Optional plain-HTTP listener for local development; null = none.'),
  bind: z.string().min(1).default('127.0.0.1').describe('Address both listeners bind.'),
  hostnames: csv
    .min(1)
    .default(['localhost'])
    .describe('Names in the server certificate and accepted as SNI; the first is the deployment domain.'),
  clusterName: z
    .string()
    .min(1)
    .max(128)
    .default('meshgate')
    .describe("This cluster's display name, advertised to peers at pairing."),
  externalUrl: z
    .url({ protocol: /^https$/ })
    .nullable()
    .default(null)
    .describe('PLATFORM_EXTERNAL_URL; derived from the first hostname and the HTTPS port when null.'),
  origin: z
    .url({ protocol: /^https$/ })
    .nullable()
    .default(null)
    .describe('PLATFORM_ORIGIN; must equal the origin of externalUrl.'),
  tlsCertFile: z
    .string()
    .nullable()
    .default(null)
    .describe('Operator-supplied server certificate (PEM); null = issue one from the platform CA.'),
  tlsKeyFile: z.string().nullable().default(null).describe('Private key for tlsCertFile (PEM).'),
  tls: tlsSettings,
  bootstrapAdminUsername: z
    .string()
    .min(1)
    .default('admin')
    .describe('Username of the administrator created at first start.'),
  bootstrapAdminPassword: z
    .string()
    .min(8)
    .nullable()
    .default(null)
    .describe('Its password for scripted installs; null = generate one and print it once.'),
  workers: z
    .union([z.literal('auto'), z.coerce.number().int().min(1).max(256)])
    .default(1)
    .describe(
      'Serving processes: 1 = one process does everything; N > 1 or `auto` (one per available core) = a primary ' +
        'that owns the once-only work and supervises N workers sharing the ports.',
    ),
  workerListen: z
    .enum(['reuseport', 'shared'])
    .default('reuseport')
    .describe(
      'How workers share the ports: `reuseport` = a socket per worker (SO_REUSEPORT), balanced by the kernel; ' +
        '`shared` = one listening socket held by the primary, which hands out connections (node:cluster).',
    ),
  logLevel: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino log level.'),
  limits: limitsSettings,
  serving: servingSettings,
  auth: authSettings,
  admin: z
    .strictObject({
      port: port
        .nullable()
        .default(null)
        .describe(
          'Admin listener (plain HTTP, GET /metrics in the Prometheus text format); null = none, 0 picks a free port.',
        ),
      bind: z
        .string()
        .min(1)
        .default('127.0.0.1')
        .describe('Address the admin listener binds; loopback keeps it off the network.'),
      metricsToken: z
        .string()
        .min(16)
        .nullable()
        .default(null)
        .describe(
          'Bearer token /metrics requires (Authorization: Bearer …); null = none, for a loopback-only listener.',
        ),
      allowUnauthenticatedMetrics: z
        .boolean()
        .default(false)
        .describe(
          'Serve /metrics without a token on a non-loopback `bind` (a management network the operator guards); ' +
            'off, such a configuration is refused at start.',
        ),
    })
    .prefault({}),
  tracing: z
    .strictObject({
      otlpEndpoint: z
        .url({ protocol: /^https?$/ })
        .nullable()
        .default(null)
        .describe(
          'OTLP/HTTP traces endpoint (e.g. http://127.0.0.1:4318/v1/traces); ' +
            'null = spans are not recorded or exported.',
        ),
      exportDelayMs: z
        .number()
        .int()
        .min(10)
        .max(60_000)
        .default(5000)
        .describe('Longest time a finished span waits in the batch before export.'),
    })
    .prefault({}),
  secrets: z
    .strictObject({
      kekDir: z
        .string()
        .min(1)
        .nullable()
        .default(null)
        .describe(
          "Folder of the catalog's versioned key-encryption keys (kek-v<N>.key, " +
            "mode 0600); null = <dataDir>/keys/kek. Keep it off the database's " +
            'disk in production.',
        ),
    })
    .prefault({}),
  federation: federationSettings,
  retrieval: retrievalSettings,
  feed: z
    .strictObject({
      pollIntervalMs: z
        .number()
        .int()
        .min(1)
        .max(20)
        .default(20)
        .describe(
          'How often each process checks the database for changes made by another (PRAGMA data_version); ' +
            'a change reaches every process within 100 ms (docs/operating.md).',
        ),
      retainRows: z.number().int().min(100).max(10_000_000).default(10_000).describe('Change-feed rows kept at least.'),
      retainSeconds: z
        .number()
        .int()
        .min(1)
        .max(86_400)
        .default(300)
        .describe(
          'Change-feed rows younger than this are kept whatever their count; a ' +
            'process further behind reloads its caches.',
        ),
    })
    .prefault({}),
  mesh: meshSettings,
  jobs: jobsSettings,
  nodes: nodesSettings,
});

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;

/** Env var → key path. Lists and numbers are parsed from their text forms. */
export const ENV_NAMES: Readonly<
  Record<string, { path: string[]; kind: 'string' | 'number' | 'csv' | 'nullable-number' | 'boolean' }>
> = {
  PLATFORM_DATA_DIR: { path: ['dataDir'], kind: 'string' },
  PLATFORM_DATABASE_URL: { path: ['database'], kind: 'string' },
  PLATFORM_NODE_KEY_FILE: { path: ['nodeKeyFile'], kind: 'string' },
  PLATFORM_NODE_KEY: { path: ['nodeKey'], kind: 'string' },
  PLATFORM_HTTPS_PORT: { path: ['httpsPort'], kind: 'number' },
  PLATFORM_HTTP_PORT: { path: ['httpPort'], kind: 'nullable-number' },
  PLATFORM_BIND: { path: ['bind'], kind: 'string' },
  PLATFORM_HOSTNAMES: { path: ['hostnames'], kind: 'csv' },
  PLATFORM_CLUSTER_NAME: { path: ['clusterName'], kind: 'string' },
  PLATFORM_EXTERNAL_URL: { path: ['externalUrl'], kind: 'string' },
  PLATFORM_ORIGIN: { path: ['origin'], kind: 'string' },
  PLATFORM_TLS_CERT_FILE: { path: ['tlsCertFile'], kind: 'string' },
  PLATFORM_TLS_KEY_FILE: { path: ['tlsKeyFile'], kind: 'string' },
  PLATFORM_ACME_DIRECTORY_URL: { path: ['tls', 'acme', 'directoryUrl'], kind: 'string' },
  PLATFORM_ACME_CONTACT: { path: ['tls', 'acme', 'contact'], kind: 'csv' },
  PLATFORM_ACME_NAMES: { path: ['tls', 'acme', 'names'], kind: 'csv' },
  PLATFORM_ACME_HTTP_PORT: { path: ['tls', 'acme', 'httpPort'], kind: 'nullable-number' },
  PLATFORM_ACME_DIRECTORY_CA_FILE: { path: ['tls', 'acme', 'directoryCaFile'], kind: 'string' },
  PLATFORM_BOOTSTRAP_ADMIN_USERNAME: { path: ['bootstrapAdminUsername'], kind: 'string' },
  PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: { path: ['bootstrapAdminPassword'], kind: 'string' },
  PLATFORM_LOG_LEVEL: { path: ['logLevel'], kind: 'string' },
  PLATFORM_WORKERS: { path: ['workers'], kind: 'string' },
  PLATFORM_WORKER_LISTEN: { path: ['workerListen'], kind: 'string' },
  PLATFORM_MAX_HEADER_COUNT: { path: ['limits', 'maxHeaderCount'], kind: 'number' },
  PLATFORM_MAX_HEADER_BYTES: { path: ['limits', 'maxHeaderBytes'], kind: 'number' },
  PLATFORM_MAX_BODY_BYTES: { path: ['limits', 'maxBodyBytes'], kind: 'number' },
  PLATFORM_HEADERS_TIMEOUT_MS: { path: ['limits', 'headersTimeoutMs'], kind: 'number' },
  PLATFORM_IDLE_TIMEOUT_MS: { path: ['limits', 'idleTimeoutMs'], kind: 'number' },
  PLATFORM_REQUEST_TIMEOUT_MS: { path: ['limits', 'requestTimeoutMs'], kind: 'number' },
  PLATFORM_HANDSHAKE_TIMEOUT_MS: { path: ['limits', 'handshakeTimeoutMs'], kind: 'number' },
  PLATFORM_MAX_CONCURRENT_STREAMS: { path: ['limits', 'maxConcurrentStreams'], kind: 'number' },
  PLATFORM_FRONTEND_UPSTREAM: { path: ['serving', 'frontendUpstream'], kind: 'string' },
  PLATFORM_NOTEBOOKS_UPSTREAM: { path: ['serving', 'notebooksUpstream'], kind: 'string' },
  PLATFORM_ADMIN_COMPUTE_UPSTREAM: { path: ['serving', 'adminComputeUpstream'], kind: 'string' },
  PLATFORM_SERVING_LEGACY_PORTS: { path: ['serving', 'legacyPortListeners'], kind: 'boolean' },
  PLATFORM_UPSTREAM_HEALTH_INTERVAL_MS: { path: ['serving', 'healthIntervalMs'], kind: 'number' },
  PLATFORM_UPSTREAM_CONNECTIONS: { path: ['serving', 'upstreamConnections'], kind: 'number' },
  PLATFORM_UPSTREAM_MAX_CONCURRENT: { path: ['serving', 'maxConcurrentRequests'], kind: 'number' },
  PLATFORM_UPSTREAM_QUEUE_TIMEOUT_MS: { path: ['serving', 'queueTimeoutMs'], kind: 'number' },
  PLATFORM_ADMIN_PORT: { path: ['admin', 'port'], kind: 'nullable-number' },
  PLATFORM_ADMIN_BIND: { path: ['admin', 'bind'], kind: 'string' },
  PLATFORM_METRICS_TOKEN: { path: ['admin', 'metricsToken'], kind: 'string' },
  PLATFORM_ALLOW_UNAUTHENTICATED_METRICS: { path: ['admin', 'allowUnauthenticatedMetrics'], kind: 'boolean' },
  PLATFORM_OTLP_ENDPOINT: { path: ['tracing', 'otlpEndpoint'], kind: 'string' },
  PLATFORM_ACCESS_TOKEN_TTL_SECONDS: { path: ['auth', 'accessTokenTtlSeconds'], kind: 'number' },
  PLATFORM_SECRETS_KEK_DIR: { path: ['secrets', 'kekDir'], kind: 'string' },
  PLATFORM_ALLOW_UNTRUSTED_FEDERATION: { path: ['federation', 'allowUntrustedFederation'], kind: 'boolean' },
  PLATFORM_TRUSTED_SHARED_ISSUERS: { path: ['federation', 'trustedSharedIssuers'], kind: 'csv' },
  PLATFORM_FEDERATION_RECONCILE_INTERVAL_SECONDS: {
    path: ['federation', 'reconcileIntervalSeconds'],
    kind: 'number',
  },
  PLATFORM_FEDERATION_DELETED_RETENTION_DAYS: { path: ['federation', 'deletedRetentionDays'], kind: 'number' },
  PLATFORM_FEDERATION_FILE: { path: ['federation', 'declaredFile'], kind: 'string' },
  PLATFORM_RETRIEVAL_FS_ROOTS: { path: ['retrieval', 'fsRoots'], kind: 'csv' },
  PLATFORM_RETRIEVAL_INLINE_THRESHOLD_BYTES: { path: ['retrieval', 'inlineThresholdBytes'], kind: 'number' },
  PLATFORM_RETRIEVAL_S3_ENDPOINT_HOSTS: { path: ['retrieval', 'endpointHosts', 's3'], kind: 'csv' },
  PLATFORM_RETRIEVAL_FLIGHT_ENDPOINTS_MAX: { path: ['retrieval', 'flightEndpointsMax'], kind: 'number' },
  PLATFORM_MESH_PROXY_READ_TIMEOUT_SECONDS: { path: ['mesh', 'proxyReadTimeoutSeconds'], kind: 'number' },
  PLATFORM_MESH_PROXY_RUNTIME_READ_TIMEOUT_SECONDS: { path: ['mesh', 'runtimeReadTimeoutSeconds'], kind: 'number' },
  PLATFORM_MESH_SIGNATURE_TTL_SECONDS: { path: ['mesh', 'signatureTtlSeconds'], kind: 'number' },
  PLATFORM_MESH_SIGNATURE_FUTURE_SKEW_SECONDS: { path: ['mesh', 'signatureFutureSkewSeconds'], kind: 'number' },
  PLATFORM_MESH_FEATURES: { path: ['mesh', 'features'], kind: 'csv' },
  PLATFORM_JOBS_RUNTIME: { path: ['jobs', 'runtime'], kind: 'string' },
  PLATFORM_RAY_DASHBOARD_URL: { path: ['jobs', 'ray', 'dashboardUrl'], kind: 'string' },
  PLATFORM_JOBS_MAX_CONCURRENT: { path: ['jobs', 'local', 'maxConcurrent'], kind: 'number' },
  PLATFORM_JOBS_LOG_RETENTION_SECONDS: { path: ['jobs', 'logRetentionSeconds'], kind: 'number' },
  PLATFORM_JOBS_PACKAGE_CATALOG: { path: ['jobs', 'pythonPackages', 'catalogFile'], kind: 'string' },
  PLATFORM_JOBS_WHEEL_DIR: { path: ['jobs', 'pythonPackages', 'wheelDir'], kind: 'string' },
  PLATFORM_JOBS_SANDBOX: { path: ['jobs', 'local', 'sandbox', 'mode'], kind: 'string' },
  PLATFORM_JOBS_NETWORK: { path: ['jobs', 'local', 'network'], kind: 'string' },
};
