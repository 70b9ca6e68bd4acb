/**
 * The single source of meshgate's configuration (STYLE C5): type, defaults,
 * descriptions and `PLATFORM_*` env names. `loadConfig()` merges defaults,
 * an optional JSON file and the environment/flags, validates with unknown
 * keys rejected, reports every problem by key path, and deep-freezes.
 */
import { z } from 'zod';

const port = z.number().int().min(0).max(65535);
const csv = z.array(z.string().min(1));

export const configSchema = z.strictObject({
  dataDir: z.string().min(1).default('data/var').describe('Folder for the SQLite database, keys and TLS material.'),
  httpsPort: port.default(8443).describe('HTTPS (HTTP/2 + HTTP/1.1) listener port; 0 picks a free port.'),
  httpPort: port.nullable().default(null).describe('Optional plain-HTTP listener for local development; null = none.'),
  bind: z.string().min(1).default('127.0.0.1').describe('Address both listeners bind.'),
  hostnames: csv.min(1).default(['localhost']).describe('Names in the server certificate and accepted as SNI; the first is the deployment domain.'),
  clusterName: z.string().min(1).max(128).default('meshgate').describe("This cluster's display name, advertised to peers at pairing."),
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
  tlsCertFile: z.string().nullable().default(null).describe('Operator-supplied server certificate (PEM); null = issue one from the platform CA.'),
  tlsKeyFile: z.string().nullable().default(null).describe('Private key for tlsCertFile (PEM).'),
  bootstrapAdminUsername: z.string().min(1).default('admin').describe('Username of the administrator created at first start.'),
  bootstrapAdminPassword: z.string().min(8).nullable().default(null).describe('Its password for scripted installs; null = generate one and print it once.'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('pino log level.'),
  limits: z
    .strictObject({
      maxHeaderCount: z.number().int().min(8).max(1000).default(100).describe('Most request headers accepted (431 beyond).'),
      maxHeaderBytes: z.number().int().min(1024).max(1048576).default(16384).describe('Most total request-header bytes (431 beyond).'),
      maxBodyBytes: z
        .number()
        .int()
        .min(1024)
        .default(16 * 1024 * 1024)
        .describe('Most bytes of a buffered API request body (413 beyond).'),
      headersTimeoutMs: z.number().int().min(100).default(30_000).describe('Time allowed to receive request headers.'),
      requestTimeoutMs: z.number().int().min(0).default(300_000).describe('Time allowed to receive a whole request; 0 = none.'),
    })
    .prefault({}),
  auth: z
    .strictObject({
      accessTokenTtlSeconds: z.number().int().min(30).max(86400).default(900).describe('Lifetime of access tokens from /api/auth/token.'),
      refreshTokenTtlSeconds: z
        .number()
        .int()
        .min(60)
        .default(7 * 86400)
        .describe('Lifetime of refresh tokens.'),
      patDefaultTtlSeconds: z
        .number()
        .int()
        .min(60)
        .default(90 * 86400)
        .describe('PAT lifetime when none is asked for.'),
      patMaxTtlSeconds: z
        .number()
        .int()
        .min(60)
        .default(365 * 86400)
        .describe('Longest PAT lifetime allowed.'),
    })
    .prefault({}),
  jobs: z
    .strictObject({
      runtime: z
        .enum(['local', 'ray'])
        .default('local')
        .describe('Job runtime: the embedded local process runner, or a Ray cluster through its Jobs REST API.'),
      defaultRunTimeoutSeconds: z
        .number()
        .int()
        .min(1)
        .max(86400)
        .default(600)
        .describe('timeout_seconds of POST /cluster/jobs/run when the request names none.'),
      logRetentionSeconds: z
        .number()
        .int()
        .min(1)
        .default(7 * 86400)
        .describe('How long a finished job keeps its logs; afterwards /logs and /result answer 410.'),
      logsResponseMaxBytes: z
        .number()
        .int()
        .min(1024)
        .default(8 * 1024 * 1024)
        .describe('Most log bytes GET /logs returns (the tail, after a notice line).'),
      runPollIntervalMs: z.number().int().min(10).max(60_000).default(250).describe('Longest wait between status checks while POST /run waits for a job.'),
      local: z
        .strictObject({
          maxConcurrent: z.number().int().min(1).max(1024).default(8).describe('Local jobs running at once; more wait PENDING in a FIFO queue.'),
          maxLogBytes: z
            .number()
            .int()
            .min(1024)
            .default(64 * 1024 * 1024)
            .describe('Output cap per local job; a job writing more is stopped as FAILED log_limit_exceeded.'),
          stopGraceMs: z.number().int().min(0).max(600_000).default(5000).describe('Time between SIGTERM and SIGKILL when a local job is canceled.'),
          python: z.string().min(1).default('python3').describe('Interpreter that creates per-job virtualenvs for python_packages.'),
        })
        .prefault({}),
      ray: z
        .strictObject({
          dashboardUrl: z
            .url({ protocol: /^https?$/ })
            .nullable()
            .default(null)
            .describe('Ray dashboard base URL (it serves the Jobs API); required with runtime=ray.'),
          requestTimeoutMs: z.number().int().min(100).default(15_000).describe('Timeout of each call to the Ray Jobs API.'),
        })
        .prefault({}),
      pythonPackages: z
        .strictObject({
          catalogFile: z.string().nullable().default(null).describe('JSON file of approved packages [{name, version, sha256[]}]; null = none approved.'),
          wheelDir: z.string().nullable().default(null).describe('Folder of the approved wheels; pip installs from it only (--no-index --find-links).'),
        })
        .prefault({}),
    })
    .prefault({}),
});

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;

/** Env var → key path. Lists and numbers are parsed from their text forms. */
export const ENV_NAMES: Readonly<Record<string, { path: string[]; kind: 'string' | 'number' | 'csv' | 'nullable-number' }>> = {
  PLATFORM_DATA_DIR: { path: ['dataDir'], kind: 'string' },
  PLATFORM_HTTPS_PORT: { path: ['httpsPort'], kind: 'number' },
  PLATFORM_HTTP_PORT: { path: ['httpPort'], kind: 'nullable-number' },
  PLATFORM_BIND: { path: ['bind'], kind: 'string' },
  PLATFORM_HOSTNAMES: { path: ['hostnames'], kind: 'csv' },
  PLATFORM_CLUSTER_NAME: { path: ['clusterName'], kind: 'string' },
  PLATFORM_EXTERNAL_URL: { path: ['externalUrl'], kind: 'string' },
  PLATFORM_ORIGIN: { path: ['origin'], kind: 'string' },
  PLATFORM_TLS_CERT_FILE: { path: ['tlsCertFile'], kind: 'string' },
  PLATFORM_TLS_KEY_FILE: { path: ['tlsKeyFile'], kind: 'string' },
  PLATFORM_BOOTSTRAP_ADMIN_USERNAME: { path: ['bootstrapAdminUsername'], kind: 'string' },
  PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: { path: ['bootstrapAdminPassword'], kind: 'string' },
  PLATFORM_LOG_LEVEL: { path: ['logLevel'], kind: 'string' },
  PLATFORM_MAX_HEADER_COUNT: { path: ['limits', 'maxHeaderCount'], kind: 'number' },
  PLATFORM_MAX_HEADER_BYTES: { path: ['limits', 'maxHeaderBytes'], kind: 'number' },
  PLATFORM_MAX_BODY_BYTES: { path: ['limits', 'maxBodyBytes'], kind: 'number' },
  PLATFORM_ACCESS_TOKEN_TTL_SECONDS: { path: ['auth', 'accessTokenTtlSeconds'], kind: 'number' },
  PLATFORM_JOBS_RUNTIME: { path: ['jobs', 'runtime'], kind: 'string' },
  PLATFORM_RAY_DASHBOARD_URL: { path: ['jobs', 'ray', 'dashboardUrl'], kind: 'string' },
  PLATFORM_JOBS_MAX_CONCURRENT: { path: ['jobs', 'local', 'maxConcurrent'], kind: 'number' },
  PLATFORM_JOBS_LOG_RETENTION_SECONDS: { path: ['jobs', 'logRetentionSeconds'], kind: 'number' },
  PLATFORM_JOBS_PACKAGE_CATALOG: { path: ['jobs', 'pythonPackages', 'catalogFile'], kind: 'string' },
  PLATFORM_JOBS_WHEEL_DIR: { path: ['jobs', 'pythonPackages', 'wheelDir'], kind: 'string' },
};
