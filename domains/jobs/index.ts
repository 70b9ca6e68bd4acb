/**
 * Jobs: submit/run/status/result/logs/cancel/list over the
 * configured runtime, the execution gate, and the forwarding shim that
 * forwards non-local selectors through MESH_EGRESS. Provides JOBS and the
 * federation's BROKERED_JOB_CANCELLER. Uses AUTHZ and MESH_EGRESS, so it
 * follows authz and mesh.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { createNodeForwarder } from '../../gateway/cluster/forward.ts';
import type { Config } from '../../gateway/config/schema.ts';
import type { HandlerModule } from '../../gateway/module.ts';
import type { ProcessPlace } from '../../gateway/process/link.ts';
import { AUTHZ } from '../authz/index.ts';
import { BROKERED_JOB_CANCELLER } from '../federation/index.ts';
import { EXECUTION_GATE_CATALOG, RECORD_GATE_CATALOG } from '../gates/index.ts';
import { MESH_EGRESS } from '../mesh/index.ts';
import { JobsErrors } from './errors.ts';
import { MeshJobForwarder } from './forward.ts';
import { ExecutionGateService, executionGateCatalog } from './gate.ts';
import { observeJobs } from './metrics.ts';
import { JobOwnership } from './ownership.ts';
import { PackageCatalog } from './packages.ts';
import { gateRoutes, jobRoutes } from './routes.ts';
import { type CgroupCaps, JobCgroups } from './runtimes/local/cgroups.ts';
import { LocalJobRuntime } from './runtimes/local/runtime.ts';
import { exposedPaths, type GuardedPath, JobSandbox } from './runtimes/local/sandbox.ts';
import { answerJobCalls, OwnedJobRuntime } from './runtimes/owned.ts';
import { RayJobRuntime } from './runtimes/ray.ts';
import type { JobRuntime } from './runtimes/types.ts';
import { JOBS, JobsService } from './service.ts';
import { createGateStore, createJobStore, createShadowStore } from './store.ts';
import { JobTracker } from './tracker.ts';

export { JOBS, type JobsService } from './service.ts';

export const jobsModule: HandlerModule = {
  name: 'jobs',
  errors: JobsErrors,
  async init(deps) {
    const jobsConfig = deps.config.jobs;
    const catalog = PackageCatalog.load(jobsConfig.pythonPackages.catalogFile);
    const runtime = createRuntime(deps.config, deps.logger, deps.process);
    const store = createJobStore(deps.db);
    observeJobs(deps.metrics, store);
    const apiUrl = () => `${deps.runtime.origin()}/api`;
    // Re-attaching jobs after a restart and sweeping expired logs happen once, in the process that owns the jobs.
    const owner = deps.process.role !== 'worker';
    const ownership = new JobOwnership(deps.nodes, store, deps.feed, deps.now, deps.logger);
    const trackerOptions = { logRetentionSeconds: jobsConfig.logRetentionSeconds, apiUrl, owner, mine: ownership.mine };
    const tracker = new JobTracker(store, runtime, trackerOptions, deps.now, deps.logger);
    const gate = new ExecutionGateService(createGateStore(deps.db), deps.now, deps.services.find(RECORD_GATE_CATALOG));
    const service = new JobsService({
      store,
      runtime,
      tracker,
      gate,
      catalog,
      authz: deps.services.get(AUTHZ),
      ownership,
      options: {
        defaultRunTimeoutSeconds: jobsConfig.defaultRunTimeoutSeconds,
        logsResponseMaxBytes: jobsConfig.logsResponseMaxBytes,
        runPollIntervalMs: jobsConfig.runPollIntervalMs,
        apiUrl,
      },
      now: deps.now,
      logger: deps.logger,
    });
    deps.services.provide(JOBS, service);
    deps.services.provide(EXECUTION_GATE_CATALOG, executionGateCatalog);
    // Allowlist revoke with cancel_in_flight_jobs=true stops the brokered user's jobs here.
    deps.services.provide(BROKERED_JOB_CANCELLER, {
      cancelActiveJobs: ({ localUserId }) => service.cancelActiveJobsOf(localUserId),
    });
    const forwarder = new MeshJobForwarder(deps.services.get(MESH_EGRESS), createShadowStore(deps.db), deps.now);
    await tracker.start();
    if (owner) ownership.start(runtime, tracker, Math.max(deps.config.nodes.deadAfterMs / 2, 100));
    const nodeForwarder = createNodeForwarder({
      caPem: () => deps.runtime.caPem(),
      servername: deps.config.hostnames[0] as string,
      self: deps.nodes.self ?? '',
    });
    return {
      routes: [
        ...jobRoutes(service, { mesh: forwarder, nodes: nodeForwarder }, deps.config.limits.maxBodyBytes, deps.tracing),
        ...gateRoutes(gate, deps.config.limits.maxBodyBytes),
      ],
      async close() {
        ownership.close();
        await nodeForwarder.close();
        tracker.close();
        await runtime.close();
      },
    };
  },
};

function createRuntime(config: Readonly<Config>, logger: Logger, place: ProcessPlace): JobRuntime {
  const { jobs } = config;
  if (jobs.runtime === 'local' && place.role === 'worker')
    return new OwnedJobRuntime(place, join(config.dataDir, 'jobs'));
  if (jobs.runtime === 'ray') {
    return new RayJobRuntime({
      dashboardUrl: jobs.ray.dashboardUrl as string,
      requestTimeoutMs: jobs.ray.requestTimeoutMs,
      wheelDir: jobs.pythonPackages.wheelDir,
    });
  }
  const { memoryBytes, requireCgroup, ...limits } = jobs.local.limits;
  const { processes } = limits;
  const sandbox = new JobSandbox({
    ...jobs.local.sandbox,
    network: jobs.local.network,
    limits,
    maxFileBytes: jobs.local.maxLogBytes + 1,
  });
  if (sandbox.isolated) {
    const exposed = exposedPaths(jobs.local.sandbox.readOnlyPaths, guardedPaths(config));
    if (exposed.length > 0)
      throw new Error(`the job sandbox would expose the gateway's secrets: ${exposed.join('; ')}`);
  }
  const cgroups = jobCgroups({ memoryBytes, processes }, requireCgroup, logger);
  const sandboxProblem = sandbox.probe().then((problem) => {
    const { problem: noCgroup } = cgroups.cgroups;
    const refused = problem ?? (requireCgroup && noCgroup !== null ? `no job cgroup: ${noCgroup}` : null);
    if (refused !== null)
      logger.error({ reason: refused }, 'the job sandbox is unavailable: local jobs are refused (503)');
    return refused;
  });
  if (!sandbox.isolated)
    logger.warn('jobs.local.sandbox.mode is "none": local jobs run UNSANDBOXED and can read the gateway’s keys');
  const local = new LocalJobRuntime({
    jobsDir: join(config.dataDir, 'jobs'),
    maxConcurrent: jobs.local.maxConcurrent,
    maxLogBytes: jobs.local.maxLogBytes,
    stopGraceMs: jobs.local.stopGraceMs,
    python: jobs.local.python,
    wheelDir: jobs.pythonPackages.wheelDir,
    baseEnv: cleanBaseEnv(),
    sandbox,
    sandboxProblem,
    ...cgroups,
  });
  if (place.role === 'primary') answerJobCalls(place, local);
  return local;
}

/**
 * Per-job cgroups with their caps. Where none can be made jobs run without the two caps (logged once, here) or,
 * with `requireCgroup`, are refused; a single job whose cgroup fails later is logged the first time only.
 */
function jobCgroups(caps: CgroupCaps, requireCgroup: boolean, logger: Logger) {
  const cgroups = JobCgroups.detect(caps);
  if (cgroups.version !== null) logger.info({ cgroup: cgroups.version, ...caps }, 'local jobs run in cgroups');
  else if (!requireCgroup)
    logger.warn(
      { reason: cgroups.problem },
      'no cgroup can be made for local jobs: they run without memory and process caps',
    );
  let failureLogged = false;
  const cgroupFailed = (jobId: string, error: Error) => {
    if (!failureLogged)
      logger.warn({ job_id: jobId, err: error }, 'a job cgroup could not be made: it runs without caps');
    failureLogged = true;
  };
  return { cgroups, caps, requireCgroup, cgroupFailed };
}

/** What no job may see: the data dir (keys, database, other jobs), the KEKs and the TLS key. */
function guardedPaths(config: Readonly<Config>): GuardedPath[] {
  const guarded = [{ setting: 'dataDir', path: config.dataDir }];
  if (config.secrets.kekDir !== null) guarded.push({ setting: 'secrets.kekDir', path: config.secrets.kekDir });
  if (config.tlsKeyFile !== null) guarded.push({ setting: 'tlsKeyFile', path: config.tlsKeyFile });
  return guarded;
}

/**
 * Jobs start from PATH and LANG only (HOME is set to the job's own work dir), never the gateway's own
 * environment: it may carry the bootstrap admin password, key locations or cloud credentials.
 */
function cleanBaseEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: process.env.LANG ?? 'C.UTF-8' };
}
