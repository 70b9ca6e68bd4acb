/**
 * The primary's pid file, `<data dir>/meshgate.pid` (mode 0600): how
 * `meshgate reload` finds the running primary, and how a second primary on
 * the same data dir is refused (two would both run the local jobs). A file
 * whose pid is gone, or is not a meshgate gateway (a reused pid), is stale
 * and replaced.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const PID_FILE = 'meshgate.pid';

const MESHGATE_SCRIPT = /(?:^|\/)(?:app\/cli\/main\.ts|meshgate\.mjs|meshgate)$/;

export function pidFilePath(dataDir: string): string {
  return join(dataDir, PID_FILE);
}

/** The live primary the file names, or null when there is no file or it is stale. */
export function runningPrimary(dataDir: string): number | null {
  let text: string;
  try {
    text = readFileSync(pidFilePath(dataDir), 'utf8');
  } catch {
    return null;
  }
  const pid = Number(text.trim());
  if (!Number.isInteger(pid) || pid <= 1) return null;
  return isMeshgateServe(pid) ? pid : null;
}

/** Writes this process's pid; refuses while another primary serves the same data dir. */
export function claimPidFile(dataDir: string): void {
  const other = runningPrimary(dataDir);
  if (other !== null && other !== process.pid) {
    throw new Error(`another meshgate primary (pid ${other}) serves ${dataDir}; stop it first`);
  }
  const path = pidFilePath(dataDir);
  rmSync(path, { force: true });
  // wx: a racing second primary that removed the stale file too fails here instead of overwriting ours.
  writeFileSync(path, `${process.pid}\n`, { mode: 0o600, flag: 'wx' });
}

/** Removes the file if it still names this process. */
export function releasePidFile(dataDir: string): void {
  if (runningPrimary(dataDir) === process.pid) rmSync(pidFilePath(dataDir), { force: true });
}

/** The pid is alive and its command line is `meshgate serve` (Linux /proc; elsewhere, alive is enough). */
function isMeshgateServe(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    // The CLI from source (app/cli/main.ts under tsx), the bundle bin/meshgate runs, or the single executable.
    return argv.some((arg) => MESHGATE_SCRIPT.test(arg)) && argv.includes('serve');
  } catch {
    return process.platform !== 'linux';
  }
}
