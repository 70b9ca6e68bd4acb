/**
 * A real Ray head for a test file (docs/test-peers.md): scripts/peers/ray.sh installs ray[default]
 * into a cached venv on first use and starts a head on loopback whose ports are its own and whose
 * every file (sessions, logs, sockets, runtime envs: hundreds of MB a run) lives in a private temp
 * folder. The head is stopped and the folder deleted in t.after, or at exit when the test process
 * ends without its after hooks. A head that cannot start fails the test with the script's output;
 * it is never skipped.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { After } from './gateway.ts';

const SCRIPT = fileURLToPath(new URL('../../scripts/peers/ray.sh', import.meta.url));
const run = promisify(execFile);

export interface RayHead {
  /** Starts (installing if needed) the head; resolves to its dashboard URL (the Jobs API). */
  start(): Promise<string>;
}

/**
 * A Ray head for this test file. Call it where `t.after` registers a hook for the whole file (a
 * test body, or the top level with node:test's `after`): an `after` registered inside a `before`
 * hook runs as soon as that hook returns, which would stop the head before any test used it.
 */
export function rayHead(t: After): RayHead {
  // A short name: Ray's socket paths under it must fit in 107 bytes (see ray.sh).
  const dir = mkdtempSync(join(tmpdir(), 'ray-'));
  let stopped = false;
  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', stopNow);
    try {
      execFileSync('bash', [SCRIPT, 'stop', dir], { stdio: 'ignore', timeout: 30_000 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  // 'exit' handlers must be synchronous: a crashed test process still stops its head.
  process.on('exit', stopNow);
  t.after(stopNow);
  return {
    async start() {
      try {
        const { stdout } = await run('bash', [SCRIPT, 'start', dir], { timeout: 20 * 60_000, maxBuffer: 16 << 20 });
        return stdout.trim();
      } catch (error) {
        const e = error as { stderr?: string; message: string };
        throw new Error(`scripts/peers/ray.sh start failed: ${e.message}\n${e.stderr ?? ''}`);
      }
    },
  };
}
