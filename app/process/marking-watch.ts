/**
 * A larger old generation while V8 marks back to back, the launch one otherwise.
 *
 * V8 sets the old generation's limit after each major collection from its live size and a growing factor it picks
 * from recent collection and allocation speeds. After idle time (its memory reducer's collections, and the one after
 * start) that factor is small: the limit sits 8–10 MB above a live heap of ~25 MB, about what a burst promotes
 * between two collections, so under a sustained burst of allocation (a large Arrow Flight read) each incremental
 * marking starts as soon as the last one ended — a major collection every ~50 ms, V8's helper threads spending as much
 * CPU as the read itself (bench/README.md, retrieval: 0.37 against 0.14 CPU-s per million rows). While major
 * collections come that close together the factor is raised (`--heap-growing-percent`, which V8 reads each time it
 * sets a limit) for RAISED_MS, so the heap grows for the burst; then the launch value is back, and a burst still
 * going raises it again after three more. A steady load that collects its old generation seconds apart (the proxy)
 * never raises it and keeps its resident size. The flag overrides V8's own thrift (its memory reducer, a heap near
 * its maximum), so it is raised only while four times the heap in use stays under half the heap's maximum, where V8's
 * own cap on a limit ((live + maximum) / 2) is not reached; and only for a while at a time, so no caller keeps it.
 *
 * The flag is part of V8's flag hash, which Node's compile cache checks when it writes at exit, so the launch value is
 * put back before the process exits too.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { launchFlag } from './v8-flags.ts';

/** Two major collections started at most this far apart are back to back (the regime's: 50–100 ms). */
const BACK_TO_BACK_MS = 250;
/** So many back to back in a row make a burst, not one unlucky pair. */
const IN_A_ROW = 3;
/** The burst's factor: the heap may grow to four times what is live before the next marking. */
const BURST_FLAG = '--heap-growing-percent=300';
/** How long the burst's factor holds at a time. */
const RAISED_MS = 10_000;

export interface MarkingWatch {
  /** Whether the burst's factor is in force (for its test). */
  readonly raised: boolean;
  close(): void;
}

/** The burst's factor leaves the heap's limit under half its maximum (V8 caps a limit there anyway). */
function roomForBurst(): boolean {
  const heap = getHeapStatistics();
  return heap.used_heap_size * 4 <= heap.heap_size_limit / 2;
}

/**
 * Starts the watch (once a process: after start's own collections, which come close together and are not a burst);
 * `setFlag` is V8's and `raisedMs` RAISED_MS (a test passes its own).
 */
export function watchMarking(setFlag: (flag: string) => void = setFlagsFromString, raisedMs = RAISED_MS): MarkingWatch {
  // Only what comes after the watch began: entries of earlier collections may still be delivered to it.
  const since = performance.now();
  let lastStart = Number.NEGATIVE_INFINITY;
  let inARow = 0;
  let raised: NodeJS.Timeout | null = null;
  const lower = () => {
    if (!raised) return;
    clearTimeout(raised);
    raised = null;
    inARow = 0;
    setFlag(launchFlag('heap-growing-percent', '--heap-growing-percent=0'));
  };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const { detail } = entry as { detail?: { kind?: number } };
      if (entry.startTime < since || detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
      inARow = entry.startTime - lastStart <= BACK_TO_BACK_MS ? inARow + 1 : 1;
      lastStart = entry.startTime;
      if (raised || inARow < IN_A_ROW || !roomForBurst()) continue;
      setFlag(BURST_FLAG);
      raised = setTimeout(lower, raisedMs).unref();
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  process.once('exit', lower);
  return {
    get raised() {
      return raised !== null;
    },
    close() {
      observer.disconnect();
      process.off('exit', lower);
      lower();
    },
  };
}
