/**
 * What the processes of one gateway must agree on about retrieval runs, so a
 * stream may land on any worker: the stream tokens' key (a token one worker
 * handed out verifies on another; on a cluster of nodes, on another node too:
 * cluster.ts), spent single-use tokens (an Arrow Flight ticket is spent once
 * in the whole gateway, not once per worker), the
 * in-memory credential overrides (never persisted), and cancel (it reaches
 * the job's streams in every process). The primary holds them; a worker
 * asks it over the owner link. One process holds them itself.
 */
import { randomBytes } from 'node:crypto';
import type { OwnerSide, ProcessPlace, WorkerSide } from '../../gateway/process/link.ts';
import { ownerCall, ownerNotice } from '../../gateway/process/link.ts';
import type { ActiveRuns } from './runs.ts';
import type { TokenLedger } from './tokens.ts';

export interface SharedRuns {
  /** The HMAC key of stream tokens: per gateway start, the same in every process. */
  readonly tokenKey: Buffer;
  /** Spends a single-use token's nonce (kept until its expiry, in seconds); false when it was spent before. */
  spend(nonce: string, expiry: number): Promise<boolean>;
  rememberOverride(jobId: string, value: string | null): Promise<void>;
  override(jobId: string): Promise<string | null>;
  /** Aborts the job's open streams in every process. */
  cancel(jobId: string): Promise<void>;
}

const TOKEN_KEY = ownerCall<null, Buffer>('retrieval.token-key');
const SPEND = ownerCall<{ nonce: string; expiry: number }, boolean>('retrieval.spend');
const REMEMBER = ownerCall<{ jobId: string; value: string | null }, void>('retrieval.override.remember');
const OVERRIDE = ownerCall<string, string | null>('retrieval.override');
const CANCEL = ownerCall<string, void>('retrieval.cancel');
const CANCELED = ownerNotice<string>('retrieval.canceled');

/**
 * `held`: what the process holding the runs uses — the token key (kept with the keys: cluster.ts) and, on a
 * cluster of nodes, the shared database's spend instead of this process's memory.
 */
export async function sharedRuns(
  place: ProcessPlace,
  runs: ActiveRuns,
  now: () => Date,
  held: { tokenKey: () => Buffer; spend: ((nonce: string, expiry: number) => boolean) | null },
): Promise<SharedRuns> {
  if (place.role === 'worker') return ownedRuns(place, runs);
  const ledger = heldLedger(now, held.tokenKey());
  const spend = held.spend;
  const shared = heldRuns(runs, spend === null ? ledger : { ...ledger, spend: async (n, e) => spend(n, e) });
  if (place.role === 'primary') answerRunCalls(place, shared, runs);
  return shared;
}

/** The key and the spent nonces, held in this process. */
export function heldLedger(now: () => Date, tokenKey: Buffer = randomBytes(32)): TokenLedger {
  const spent = new Map<string, number>();
  return {
    tokenKey,
    async spend(nonce, expiry) {
      const at = now().getTime() / 1000;
      for (const [seen, until] of spent) if (until <= at) spent.delete(seen);
      if (spent.has(nonce)) return false;
      spent.set(nonce, expiry);
      return true;
    },
  };
}

/** Held in this process: the whole gateway when it is one process, or the primary. */
function heldRuns(runs: ActiveRuns, ledger: TokenLedger): SharedRuns {
  return {
    ...ledger,
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
  link.answer(SPEND, ({ nonce, expiry }) => held.spend(nonce, expiry));
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
    spend: (nonce, expiry) => link.ask(SPEND, { nonce, expiry }),
    rememberOverride: (jobId, value) => (value === null ? Promise.resolve() : link.ask(REMEMBER, { jobId, value })),
    override: (jobId) => link.ask(OVERRIDE, jobId),
    async cancel(jobId) {
      runs.cancel(jobId);
      await link.ask(CANCEL, jobId);
    },
  };
}
