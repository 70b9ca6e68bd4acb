/**
 * The collection after start: it drops the code of functions that ran once (what only start runs) and leaves V8's
 * flags as they were launched, which Node's compile cache checks (its tag covers the flag hash).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cachedDataVersionTag, getHeapCodeStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { collectOnce } from '../../../../app/process/release-memory.ts';
import { launchFlag } from '../../../../app/process/v8-flags.ts';

/**
 * gc() as the launchers' `--expose-gc` gives it; this test's own process is started without the flag, so it reaches
 * gc() through a context of its own (which the gateway must not do: it costs every later request CPU).
 */
function exposedGc(): NodeJS.GCFunction {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as NodeJS.GCFunction;
  setFlagsFromString('--no-expose-gc');
  return gc;
}

/** An ordinary full collection, to tell apart what only collectOnce's flags free. */
function plainCollection(): void {
  exposedGc()({ type: 'major', execution: 'sync' });
}

test('bytecode that ran once is flushed though still reachable, and the compile cache tag is unchanged', () => {
  const tag = cachedDataVersionTag();
  // 2 000 functions, each compiled to bytecode by its one call, none of which runs again; all still reachable, so
  // only flushing (not their collection) can free their bytecode.
  const kept: ((x: number) => number)[] = [];
  for (let i = 0; i < 2000; i++) {
    const body = Array.from({ length: 20 }, (_, j) => `x = (x * ${i + j} + ${j}) % 1000003;`).join('');
    const run = new Function('x', `${body} return x;`) as (x: number) => number;
    run(i);
    kept.push(run);
  }
  // An ordinary collection first: it frees the garbage compiling left, and keeps the bytecode (age 1 of 6).
  plainCollection();
  const before = getHeapCodeStatistics().bytecode_and_metadata_size;
  collectOnce(exposedGc());
  const after = getHeapCodeStatistics().bytecode_and_metadata_size;
  assert.ok(after < before / 2, `bytecode and metadata ${before} → ${after} bytes`);
  assert.equal(cachedDataVersionTag(), tag);
  assert.equal(kept[0]?.(7), kept[0]?.(7), 'a flushed function still runs: it is compiled again');
});

test('under load (major collections close together) one ordinary collection follows, once; idle, none', async () => {
  const real = exposedGc();
  const calls: unknown[] = [];
  const gc = ((options?: unknown) => {
    calls.push(options);
    return real(options as Parameters<NodeJS.GCFunction>[0] & { execution: 'sync' });
  }) as NodeJS.GCFunction;
  const settled = () => new Promise((resolve) => setTimeout(resolve, 100));
  // The watch an earlier test's collectOnce started ends here, so only this test's is left to count.
  real({ type: 'major', execution: 'sync' });
  real({ type: 'major', execution: 'sync' });
  await settled();
  collectOnce(gc);
  assert.deepEqual(calls, [{ type: 'major', execution: 'sync', flavor: 'last-resort' }]);
  // One major collection alone is what an idle process may run: nothing follows.
  real({ type: 'major', execution: 'sync' });
  await settled();
  assert.equal(calls.length, 1);
  // A second one within seconds: under load. The ordinary collection runs once, and the watch ends.
  real({ type: 'major', execution: 'sync' });
  await settled();
  assert.deepEqual(calls.slice(1), [{ type: 'major', execution: 'sync' }]);
  real({ type: 'major', execution: 'sync' });
  real({ type: 'major', execution: 'sync' });
  await settled();
  assert.equal(calls.length, 2);
});

test('without gc() in its own context (launched without --expose-gc) the process collects nothing', () => {
  const tag = cachedDataVersionTag();
  const bytecode = getHeapCodeStatistics().bytecode_and_metadata_size;
  collectOnce(null);
  assert.ok(getHeapCodeStatistics().bytecode_and_metadata_size >= bytecode, 'no bytecode was flushed');
  assert.equal(cachedDataVersionTag(), tag);
});

test("a flag's launch spelling: V8's default unless given, the command line after NODE_OPTIONS", () => {
  assert.equal(launchFlag('bytecode-old-age', '--bytecode-old-age=6', [], ''), '--bytecode-old-age=6');
  assert.equal(launchFlag('expose-gc', '--no-expose-gc', ['--max-semi-space-size=4'], '--expose_gc'), '--expose_gc');
  assert.equal(
    launchFlag('bytecode-old-age', '--bytecode-old-age=6', ['--bytecode-old-age=9', '-bytecode_old_age=2'], ''),
    '-bytecode_old_age=2',
  );
  assert.equal(
    launchFlag('flush-baseline-code', '--no-flush-baseline-code', ['--noflush-baseline-code'], '--expose-gc'),
    '--noflush-baseline-code',
  );
  assert.equal(
    launchFlag('expose-gc', '--no-expose-gc', ['--expose-gc-extra', '--flush-bytecode'], ''),
    '--no-expose-gc',
  );
});
