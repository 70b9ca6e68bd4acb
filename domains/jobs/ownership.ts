/**
 * Local jobs on a cluster of several nodes: a local job runs, and keeps its log files, on the node that accepted it
 * (its record names that node); every node reads its record from the shared database. What needs the job itself
 * reaches that node: a stop is recorded by whichever node is asked and published on the change feed, where the owner
 * hears it and stops the processes; reading logs or the result is sent on to the owner (routes.ts). A node silent
 * past `nodes.deadAfterMs` took its jobs' processes with it: another node ends them as lost, as a gateway restarted
 * without them does. Ray jobs belong to no node (every node reaches Ray).
 */
import type { Logger } from 'pino';
import type { ClusterNodes } from '../../gateway/cluster/nodes.ts';
import type { ChangeFeed } from '../../gateway/db/change-feed.ts';
import type { JobRuntime } from './runtimes/types.ts';
import type { JobRow, JobStore } from './store.ts';
import { type JobTracker, lostPatch } from './tracker.ts';

/** Feed topic: a stop recorded on one node for a job another node runs (key: the job id). */
export const JOB_STOP_TOPIC = 'job_stop';

export class JobOwnership {
  #sweeper: NodeJS.Timeout | null = null;

  constructor(
    private readonly nodes: ClusterNodes,
    private readonly store: JobStore,
    private readonly feed: ChangeFeed,
    private readonly now: () => Date,
    private readonly logger: Logger,
  ) {}

  /** The node a new job of the runtime belongs to (null: any node reaches it, or there is one node). */
  ownerFor(runtime: JobRuntime): string | null {
    return runtime.kind === 'local' ? this.nodes.self : null;
  }

  /** The job runs in this node's runtime (or in one every node reaches). */
  readonly mine = (row: JobRow): boolean => !this.nodes.elsewhere(row.ownerNode);

  /** The URL of the live node that runs the job, when that is another node. */
  ownerUrl(jobId: string): string | null {
    const owner = this.store.get(jobId)?.ownerNode ?? null;
    return this.nodes.elsewhere(owner) ? this.nodes.liveUrl(owner) : null;
  }

  /** After another node's job was recorded STOPPED here: its owner stops the processes. */
  requestStop(row: JobRow): void {
    this.feed.publish(JOB_STOP_TOPIC, row.id);
  }

  /** In the process that owns this node's jobs: stops asked by other nodes, and dead nodes' jobs ended. */
  start(runtime: JobRuntime, tracker: JobTracker, sweepEveryMs: number): void {
    if (this.nodes.self === null) return;
    this.feed.subscribe(JOB_STOP_TOPIC, (jobId) => {
      const row = this.store.get(jobId);
      if (!row || row.ownerNode !== this.nodes.self) return;
      runtime
        .stop(row.runtimeJobId)
        .catch((error) => this.logger.warn({ err: error, job_id: jobId }, 'job stop signal failed'));
    });
    this.#sweeper = setInterval(() => this.#endJobsOfDeadNodes(tracker), sweepEveryMs);
    this.#sweeper.unref();
  }

  close(): void {
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = null;
  }

  #endJobsOfDeadNodes(tracker: JobTracker): void {
    try {
      for (const node of this.nodes.deadNodes()) {
        for (const row of this.store.activeOwnedBy(node)) {
          const message = `the cluster node that ran the job (${node}) stopped answering`;
          if (tracker.patchActive(row.id, lostPatch(message, this.now())))
            this.logger.warn({ job_id: row.id, node }, 'job lost with its node');
        }
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'jobs of stopped nodes could not be checked; trying again');
    }
  }
}
