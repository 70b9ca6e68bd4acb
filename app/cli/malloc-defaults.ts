/**
 * glibc's malloc settings for a long-running gateway: one arena, trimmed above 128 KiB, so the peaks of start, the
 * JIT compiler and I/O go back to the OS (bench/README.md, startup and proxy: a few MB less idle, much less under
 * load). glibc reads them only from the environment when a process starts
 * (https://www.gnu.org/software/libc/manual/html_node/Memory-Allocation-Tunables.html), so bin/meshgate exports
 * them and the single executable, which has no launcher, starts itself once more with them (app/cli/sea-main.ts).
 * A value the environment already sets is kept.
 */
const MALLOC_DEFAULTS = { MALLOC_ARENA_MAX: '1', MALLOC_TRIM_THRESHOLD_: '131072' } as const;

/** The environment with the defaults it lacks; null when it sets them all. */
export function withMallocDefaults(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv | null {
  const missing = Object.entries(MALLOC_DEFAULTS).filter(([name]) => env[name] === undefined);
  return missing.length ? { ...env, ...Object.fromEntries(missing) } : null;
}
