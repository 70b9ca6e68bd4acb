/**
 * Loaded with `--import` into every test file's process (scripts/test.sh). node's runner waits for a file's event
 * loop to empty after its last test, so a child process or socket a failed cleanup left open would hold the whole
 * run until CI's own limit. After a file's tests, this waits a grace period (unref'd: an idle file exits at once),
 * then names what is still open, kills every process below the file's and fails the file.
 */
import { after } from 'node:test';
import { descendants } from './processes.ts';

// A test of the watchdog itself shortens the grace.
const GRACE_MS = Number(process.env.MESHGATE_TEST_WATCHDOG_MS ?? 120_000);

// Only in the per-file processes the runner starts, not in the runner itself.
if (process.env.NODE_TEST_CONTEXT !== undefined) {
  after(() => {
    setTimeout(() => {
      const left = descendants(process.pid);
      process.stderr.write(
        `file watchdog: the event loop was still busy ${GRACE_MS / 1000} s after the last test; ` +
          `open: ${process.getActiveResourcesInfo().join(', ')}; ` +
          `processes below it (killed): ${left.map((c) => `${c.pid} ${c.name}`).join(', ') || 'none'}\n`,
      );
      for (const child of left) process.kill(child.pid, 'SIGKILL');
      process.exit(1);
    }, GRACE_MS).unref();
  });
}
