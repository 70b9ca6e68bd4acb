/**
 * The supervision messages between the primary and its workers, beside the
 * owner link's (gateway/process/link.ts) on the same IPC pipe.
 */
import type { Config } from '../../gateway/config/schema.ts';

/** How long in-flight requests may take to finish when a process stops or a worker is replaced. */
export const DRAIN_GRACE_MS = 10_000;

/** Primary → worker. */
export type ToWorker =
  /** Serve with this configuration (the primary's reading of it: ports resolved, re-read at each reload). */
  | { readonly supervise: 'start'; readonly config: Config }
  /** Stop accepting, let in-flight requests finish (up to graceMs), then exit. */
  | { readonly supervise: 'drain'; readonly graceMs: number };

/** Worker → primary. */
export type ToPrimary =
  | { readonly supervise: 'ready'; readonly httpsUrl: string; readonly httpUrl: string | null; readonly origin: string }
  | { readonly supervise: 'failed'; readonly message: string };

export function isSupervision<T extends ToWorker | ToPrimary>(message: unknown): message is T {
  return typeof message === 'object' && message !== null && 'supervise' in message;
}
