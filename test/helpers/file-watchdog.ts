/**
 * Loaded with `--import` into every test file's process (scripts/test.sh). node's runner waits for a file's event
 * loop to empty after its last test, so a child process or socket a failed cleanup left open would hold the whole
 * run until CI's own limit. After a file's tests, this waits a grace period (unref'd: an idle file exits at once),
 * then names what is still open, kills the file's child processes and fails the file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { after } from 'node:test';

// A test of the watchdog itself shortens the grace.
const GRACE_MS = Number(process.env.MESHGATE_TEST_WATCHDOG_MS ?? 120_000);

/** Live children of this process, named, from /proc (stat field 4 is the parent pid). */
function children(): { pid: number; name: string }[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(ppid) !== process.pid || state === 'Z') return [];
        return [{ pid: Number(entry), name: stat.slice(stat.indexOf('('), stat.lastIndexOf(')') + 1) }];
      } catch {
        return []; // ended meanwhile
      }
    });
}

// Only in the per-file processes the runner starts, not in the runner itself.
if (process.env.NODE_TEST_CONTEXT !== undefined) {
  after(() => {
    setTimeout(() => {
      const left = children();
      process.stderr.write(
        `file watchdog: the event loop was still busy ${GRACE_MS / 1000} s after the last test; ` +
          `open: ${process.getActiveResourcesInfo().join(', ')}; ` +
          `child processes (killed): ${left.map((c) => `${c.pid} ${c.name}`).join(', ') || 'none'}\n`,
      );
      for (const child of left) process.kill(child.pid, 'SIGKILL');
      process.exit(1);
    }, GRACE_MS).unref();
  });
}
