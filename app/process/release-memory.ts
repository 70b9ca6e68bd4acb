/**
 * What start leaves behind, given back once a gateway process serves (one process, each worker, the primary).
 *
 * Start allocates far more than the idle gateway keeps (every module's setup, migrations, TLS material), and V8
 * keeps the young generation it grew to for that — up to the launchers' 4 MiB semi-space — committed while idle.
 * One full collection that reduces the footprint, once, gives that back (about 15 MB resident; bench/README.md,
 * startup); under load the young generation grows again as it needs.
 *
 * That collection also drops the code of what only start ran (reading the configuration, the migrations, each
 * domain's setup): its bytecode (~2 MB), which V8 flushes once a function has gone unrun through
 * `--bytecode-old-age` major collections (6 by default, src/flags/flag-definitions.h) and an idle gateway runs
 * none, and its baseline (Sparkplug) code (~1.4 MB), which V8 keeps unless `--flush-baseline-code`; and it
 * compacts the old generation (~0.5 MB of fragments). So for this collection the age is 1 and both are on, and each
 * flag is back to its launch value after. A flushed function is compiled again if it ever runs.
 *
 * The collection is V8's gc() in the process's own context: the launchers start Node.js with `--expose-gc`
 * (bin/meshgate, and the executable's own arguments, scripts/build.ts). Without it nothing is collected: the one other
 * way to reach gc() after start, a second V8 context with the flag set, leaves every later request ~10 % more CPU
 * (bench/README.md, proxy), for as long as the process lives. The flag has a price at start: it changes V8's flag
 * hash, so Node.js compiles its own modules without their embedded code cache (~30 ms more to serve; bench/README.md,
 * startup), paid once where the other is paid on every request. Each flag the collection sets is set back to its
 * launch spelling after: V8's flag hash, which Node's compile cache checks, is of the current values (changed for
 * good, it would have every later start parse its modules again: +40 MB, +150 ms). Nothing here is needed for the
 * gateway to work: a failure is ignored (this runs from a timer, where a throw would end the process).
 *
 * A collection that reduces the footprint also leaves V8 growing the old generation as for a process that should stay
 * small: under load it then runs a major collection every second or so where it otherwise runs one in tens of
 * seconds (~8 % more CPU per proxied request, bench/README.md, proxy). So once major collections come close together
 * — a process under load; an idle one runs them minutes apart, if at all — one ordinary collection has V8 size the
 * heap for the load again. After it, the marking watch (marking-watch.ts) lets the heap grow for bursts of
 * allocation that would otherwise have V8 marking back to back.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { watchMarking } from './marking-watch.ts';
import { launchFlag } from './v8-flags.ts';

/** Long enough for the requests queued behind start to be answered first; well before a gateway is called idle. */
const RELEASE_AFTER_MS = 500;

/** V8's flags for the one collection, by name, each with V8's default (its value when not given at launch). */
const COLLECTION_FLAGS = [
  { name: 'bytecode-old-age', collect: '--bytecode-old-age=1', v8Default: '--bytecode-old-age=6' },
  { name: 'flush-baseline-code', collect: '--flush-baseline-code', v8Default: '--no-flush-baseline-code' },
  {
    name: 'compact-on-every-full-gc',
    collect: '--compact-on-every-full-gc',
    v8Default: '--no-compact-on-every-full-gc',
  },
] as const;

export function releaseStartupMemory(): void {
  // Not at once: a full collection takes tens of milliseconds, and the first requests (a supervisor's health check,
  // the clients that waited for the ready line) would wait behind it.
  setTimeout(() => {
    collectOnce();
    // After the collection: its own major collections, close together, are not a burst.
    watchMarking();
  }, RELEASE_AFTER_MS).unref();
}

/** Two major collections less than this apart: the process is under load (an idle one runs them minutes apart). */
const UNDER_LOAD_MS = 10_000;

/**
 * The one collection, by the gc() `--expose-gc` gives the process's context, then the watch that sizes the heap for
 * load again (exported for its test).
 */
export function collectOnce(
  gc: NodeJS.GCFunction | null = (globalThis as { gc?: NodeJS.GCFunction }).gc ?? null,
): void {
  if (gc === null) return;
  try {
    for (const flag of COLLECTION_FLAGS) setFlagsFromString(flag.collect);
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } catch {
    // Memory not given back this time; the gateway serves the same.
    return;
  } finally {
    for (const flag of COLLECTION_FLAGS) setFlagsFromString(launchFlag(flag.name, flag.v8Default));
  }
  regrowUnderLoad(gc);
}

/** Once two major collections come within UNDER_LOAD_MS of each other, one ordinary collection; then no watch. */
function regrowUnderLoad(gc: NodeJS.GCFunction): void {
  let lastMajor = Number.NEGATIVE_INFINITY;
  // Only what runs after the watch began: the collections the release itself ran are not load.
  const since = performance.now();
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const { detail } = entry as { detail?: { kind?: number } };
      if (entry.startTime < since || detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
      if (entry.startTime - lastMajor >= UNDER_LOAD_MS) {
        lastMajor = entry.startTime;
        continue;
      }
      observer.disconnect();
      // Not from within the observer's callback, which V8's collection notified.
      setImmediate(() => {
        try {
          gc({ type: 'major', execution: 'sync' });
        } catch {
          // The heap keeps the growth it has; the gateway serves the same.
        }
      }).unref();
      return;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
}
