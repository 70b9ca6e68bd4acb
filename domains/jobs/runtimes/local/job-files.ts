/**
 * A local job's identity in the runtime and its log file: what any process of the gateway needs to read a job's
 * output, whichever process started it.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { LogSource } from '../types.ts';
import { jobPaths } from './process.ts';

const PREFIX = 'local-';

export function localRuntimeJobId(jobId: string): string {
  return `${PREFIX}${jobId}`;
}

/** A local job's log, read from its file: any process of the gateway may read it, whichever one started the job. */
export async function openJobLog(jobsDir: string, runtimeJobId: string): Promise<LogSource | null> {
  // O_NOFOLLOW: a symlink where the log should be is never followed (the job cannot reach this dir in
  // its sandbox; without one, it could).
  const path = jobPaths(jobsDir, jobIdOf(runtimeJobId)).log;
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => null);
  if (!handle) return null;
  const { size } = await handle.stat();
  return {
    size,
    async read(position, length) {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      return buffer.subarray(0, bytesRead);
    },
    close: () => handle.close(),
  };
}

export function jobIdOf(runtimeJobId: string): string {
  return runtimeJobId.startsWith(PREFIX) ? runtimeJobId.slice(PREFIX.length) : runtimeJobId;
}
