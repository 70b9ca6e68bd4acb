/**
 * The real Ray head for tests (DESIGN.md §7): scripts/peers/ray.sh installs
 * ray[default] into a cached venv on first use and starts a head on
 * loopback. A head that cannot start fails the test with the script's
 * output; it is never skipped.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const SCRIPT = fileURLToPath(new URL('../../scripts/peers/ray.sh', import.meta.url));
const run = promisify(execFile);

async function ray(command: 'start' | 'stop', timeoutMs: number): Promise<string> {
  try {
    const { stdout } = await run('bash', [SCRIPT, command], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
    return stdout.trim();
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`scripts/peers/ray.sh ${command} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
}

/** Starts (installing if needed) the Ray head; returns its dashboard URL. */
export function startRay(): Promise<string> {
  return ray('start', 20 * 60_000);
}

export async function stopRay(): Promise<void> {
  await ray('stop', 60_000);
}
