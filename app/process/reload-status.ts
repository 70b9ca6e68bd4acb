/**
 * The outcome of each reload the primary was asked for (SIGHUP), in `<data dir>/meshgate.reload.json` (0600):
 * how `meshgate reload`, which can only send a signal, learns whether its reload was applied. A signal carries no
 * answer; the primary's stdout may be a journal the command cannot read.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const RELOAD_STATUS_FILE = 'meshgate.reload.json';

export type ReloadOutcome = 'reloaded' | 'failed' | 'ignored';

export interface ReloadStatus {
  readonly outcome: ReloadOutcome;
  /** What was done, or why not: the line the primary also prints. */
  readonly detail: string;
  /**
   * When the primary took the hang-up up (monotonicMs()): a reload that began after a signal was sent read the
   * configuration as it was then, so its outcome answers that signal.
   */
  readonly begunAt: number;
}

/**
 * Milliseconds of CLOCK_MONOTONIC, which every process of a Linux host reads alike (clock_gettime(2)), unlike the
 * wall clock, which a time sync may step back between the signal and the reload.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

export function readReloadStatus(dataDir: string): ReloadStatus | null {
  try {
    return JSON.parse(readFileSync(join(dataDir, RELOAD_STATUS_FILE), 'utf8')) as ReloadStatus;
  } catch {
    return null; // none yet, or being replaced: the caller looks again
  }
}

/** Written beside and renamed into place, so a reader never sees half of it. */
export function writeReloadStatus(dataDir: string, status: ReloadStatus): void {
  const file = join(dataDir, RELOAD_STATUS_FILE);
  const staging = `${file}.${process.pid}.tmp`;
  writeFileSync(staging, `${JSON.stringify(status)}\n`, { mode: 0o600 });
  renameSync(staging, file);
}
