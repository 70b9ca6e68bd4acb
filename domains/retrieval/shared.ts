/**
 * What the processes of one gateway must agree on about retrieval runs, so a
 * stream may land on any worker: the stream tokens' key (a token one worker
 * handed out verifies on another; on a cluster of nodes, on another node too:
 * cluster.ts), the in-memory credential overrides (never persisted), and
 * cancel (it reaches the job's streams in every process). The primary holds
 * them; a worker asks it over the owner link. One process holds them itself.
 * Spent single-use tokens are not among them: every process spends in the
 * database, which all of them share (cluster.ts).
 */
import type { OwnerSide, ProcessPlace, WorkerSide } from '../../gateway/process/link.ts';
import { ownerCall, ownerNotice } from '../../gateway/process/link.ts';
import type { ActiveRuns } from './runs.ts';

export interface SharedRuns {
  /** The HMAC key of stream tokens: kept with the cluster identity, the same in every process and node. */
  readonly tokenKey: Buffer;
  rememberOverride(jobId: string, value: string | null): Promise<void>;
  override(jobId: string): Promise<string | null>;
  /** Aborts the job's open streams in every process. */
  cancel(jobId: string): Promise<void>;
}

const TOKEN_KEY = ownerCall<null, Buffer>('retrieval.token-key');
const REMEMBER = ownerCall<{ jobId: string; value: string | null }, void>('retrieval.override.remember');
const OVERRIDE = ownerCall<string, string | null>('retrieval.override');
const CANCEL = ownerCall<string, void>('retrieval.cancel');
const CANCELED = ownerNotice<string>('retrieval.canceled');

/** `tokenKey`: read by the process holding the runs (kept with the keys: cluster.ts); a worker asks for it. */
export async function sharedRuns(place: ProcessPlace, runs: ActiveRuns, tokenKey: () => Buffer): Promise<SharedRuns> {
  if (place.role === 'worker') return ownedRuns(place, runs);
  const shared = heldRuns(runs, tokenKey());
  if (place.role === 'primary') answerRunCalls(place, shared, runs);
  return shared;
}

/** Held in this process: the whole gateway when it is one process, or the primary. */
function heldRuns(runs: ActiveRuns, tokenKey: Buffer): SharedRuns {
  return {
    tokenKey,
    async rememberOverride(jobId, value) {
      runs.rememberOverride(jobId, value);
    },
    async override(jobId) {
      return runs.override(jobId);
    },
    async cancel(jobId) {
      runs.cancel(jobId);
    },
  };
}

function answerRunCalls(link: OwnerSide, held: SharedRuns, runs: ActiveRuns): void {
  link.answer(TOKEN_KEY, () => held.tokenKey);
  link.answer(REMEMBER, ({ jobId, value }) => held.rememberOverride(jobId, value));
  link.answer(OVERRIDE, (jobId) => held.override(jobId));
  // Answered once every worker has aborted the job's streams: a cancel that returned has taken effect everywhere.
  link.answer(CANCEL, (jobId) => {
    runs.cancel(jobId);
    return link.notify(CANCELED, jobId);
  });
}

async function ownedRuns(link: WorkerSide, runs: ActiveRuns): Promise<SharedRuns> {
  link.listen(CANCELED, (jobId) => runs.cancel(jobId));
  return {
    tokenKey: await link.ask(TOKEN_KEY, null),
    rememberOverride: (jobId, value) => (value === null ? Promise.resolve() : link.ask(REMEMBER, { jobId, value })),
    override: (jobId) => link.ask(OVERRIDE, jobId),
    async cancel(jobId) {
      runs.cancel(jobId);
      await link.ask(CANCEL, jobId);
    },
  };
}
