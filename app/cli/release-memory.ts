/**
 * What start leaves behind, given back once the gateway serves.
 *
 * Start allocates far more than the idle gateway keeps (every module's setup, migrations, TLS material), and V8
 * keeps the young generation it grew to for that — up to the launchers' 4 MiB semi-space — committed while idle.
 * One full collection that reduces the footprint, once, gives that back (about 20 MB resident; bench/README.md,
 * startup); under load the young generation grows again as it needs.
 *
 * That collection also drops the bytecode of what only start ran (reading the configuration, the migrations, each
 * domain's setup: ~2 MB). V8 flushes a function's bytecode once it has gone unrun through `--bytecode-old-age`
 * major collections (6 by default, src/flags/flag-definitions.h); an idle gateway runs none, so it is 1 for this
 * collection and back to its launch value after. A flushed function is compiled again if it ever runs.
 *
 * V8's gc() is exposed for this one call only, and each flag is set back at once: V8's flag hash, which Node's
 * compile cache checks, is of the current values (as a launch flag, --expose-gc would have the executable and
 * bin/meshgate parse every module again at every start: +40 MB, +150 ms).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Long enough for the requests queued behind start to be answered first; well before a gateway is called idle. */
const RELEASE_AFTER_MS = 500;
const V8_BYTECODE_OLD_AGE = 6;

export function releaseStartupMemory(): void {
  // Not at once: a full collection takes tens of milliseconds, and the first requests (a supervisor's health check,
  // the clients that waited for the ready line) would wait behind it.
  setTimeout(collectOnce, RELEASE_AFTER_MS).unref();
}

/** The one collection (exported for its test). */
export function collectOnce(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as NodeJS.GCFunction;
  setFlagsFromString('--no-expose-gc');
  setFlagsFromString('--bytecode-old-age=1');
  try {
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } finally {
    setFlagsFromString(`--bytecode-old-age=${launchBytecodeOldAge()}`);
  }
}

/** The value given at launch, on the command line or in NODE_OPTIONS (V8 takes the last; `_` may spell `-`). */
export function launchBytecodeOldAge(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
): number {
  const given = [...nodeOptions.split(/\s+/), ...execArgv].flatMap((arg) => {
    const value = /^--bytecode[-_]old[-_]age=(\d+)$/.exec(arg)?.[1];
    return value ? [Number(value)] : [];
  });
  return given.at(-1) ?? V8_BYTECODE_OLD_AGE;
}
