/**
 * The `jobs` section of the configuration (gateway/config/schema.ts): the job runtime, the local runtime's
 * queue, output cap, sandbox and per-job limits, the approved Python packages.
 */
import { z } from 'zod';

export const jobsSettings = z
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
    runPollIntervalMs: z
      .number()
      .int()
      .min(10)
      .max(60_000)
      .default(250)
      .describe('Longest wait between status checks while POST /run waits for a job.'),
    local: z
      .strictObject({
        maxConcurrent: z
          .number()
          .int()
          .min(1)
          .max(1024)
          .default(8)
          .describe('Local jobs running at once; more wait PENDING in a FIFO queue.'),
        maxLogBytes: z
          .number()
          .int()
          .min(1024)
          .default(64 * 1024 * 1024)
          .describe('Output cap per local job (and RLIMIT_FSIZE of its files); more is FAILED log_limit_exceeded.'),
        stopGraceMs: z
          .number()
          .int()
          .min(0)
          .max(600_000)
          .default(5000)
          .describe('Time between SIGTERM and SIGKILL when a local job is canceled.'),
        python: z
          .string()
          .min(1)
          .default('python3')
          .describe('Interpreter that creates per-job virtualenvs for python_packages.'),
        network: z
          .enum(['host', 'none'])
          .default('host')
          .describe(
            "host: jobs share the host's network (they can call the gateway's API). " +
              'none: each sandboxed job has a network namespace of its own and reaches nothing, the gateway included.',
          ),
        sandbox: z
          .strictObject({
            mode: z
              .enum(['bwrap', 'none'])
              .default('bwrap')
              .describe(
                'bwrap: every job in a bubblewrap sandbox. none: UNSAFE, jobs see all the gateway user can read.',
              ),
            bwrapPath: z
              .string()
              .min(1)
              .default('/usr/bin/bwrap')
              .describe('The bubblewrap binary; missing or refused = jobs 503.'),
            uid: z
              .number()
              .int()
              .min(1)
              .max(4_294_967_294)
              .default(65534)
              .describe('uid and gid jobs run as when the gateway runs as root (never root itself).'),
            readOnlyPaths: z
              .array(z.string().regex(/^\//, 'must be an absolute path'))
              .default([])
              .describe('Extra host paths mounted read-only into every sandbox (an interpreter under /opt).'),
          })
          .prefault({}),
        limits: z
          .strictObject({
            addressSpaceBytes: z
              .number()
              .int()
              .min(64 * 1024 * 1024)
              .default(4 * 1024 * 1024 * 1024)
              .describe('RLIMIT_AS of each job process.'),
            memoryBytes: z
              .number()
              .int()
              .min(16 * 1024 * 1024)
              .default(4 * 1024 * 1024 * 1024)
              .describe(
                "Memory of each job's cgroup (memory.max), its /tmp included; beyond it the kernel kills in it.",
              ),
            processes: z
              .number()
              .int()
              .min(8)
              .default(256)
              .describe(
                "Processes and threads of each job's cgroup (pids.max), its supervisor and bwrap included; " +
                  'without a cgroup, the RLIMIT_NPROC of the job uid (shared by its jobs).',
              ),
            requireCgroup: z
              .boolean()
              .default(false)
              .describe('Refuse local jobs (503) when no cgroup can be made for them; false: run them without.'),
            openFiles: z.number().int().min(16).default(1024).describe('RLIMIT_NOFILE of each job process.'),
            cpuSeconds: z.number().int().min(1).default(3600).describe('RLIMIT_CPU: CPU seconds of each job process.'),
            tmpBytes: z
              .number()
              .int()
              .min(1024 * 1024)
              .default(256 * 1024 * 1024)
              .describe('Size of the private /tmp (tmpfs).'),
          })
          .prefault({}),
      })
      .prefault({}),
    ray: z
      .strictObject({
        dashboardUrl: z
          .url({ protocol: /^https?$/ })
          .nullable()
          .default(null)
          .describe('Ray dashboard base URL (it serves the Jobs API); required with runtime=ray.'),
        requestTimeoutMs: z
          .number()
          .int()
          .min(100)
          .default(15_000)
          .describe('Timeout of each call to the Ray Jobs API.'),
      })
      .prefault({}),
    pythonPackages: z
      .strictObject({
        catalogFile: z
          .string()
          .nullable()
          .default(null)
          .describe('JSON file of approved packages [{name, version, sha256[]}]; null = none approved.'),
        wheelDir: z
          .string()
          .nullable()
          .default(null)
          .describe('Folder of the approved wheels; pip installs from it only (--no-index --find-links).'),
      })
      .prefault({}),
  })
  .prefault({});
