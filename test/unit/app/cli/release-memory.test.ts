/**
 * The collection after start: it drops the code of functions that ran once (what only start runs) and leaves V8's
 * flags as they were launched, which Node's compile cache checks (its tag covers the flag hash).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cachedDataVersionTag, getHeapSpaceStatistics } from 'node:v8';
import { collectOnce, launchFlag } from '../../../../app/cli/release-memory.ts';

/** Where V8 keeps bytecode (its trusted space, outside the sandbox), in bytes used. */
function bytecodeSpaceUsed(): number {
  const space = getHeapSpaceStatistics().find((s) => s.space_name === 'trusted_space');
  assert.ok(space, 'V8 has a trusted space');
  return space.space_used_size;
}

test('bytecode that ran once is flushed, and the compile cache tag is unchanged', () => {
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
  const before = bytecodeSpaceUsed();
  collectOnce();
  const after = bytecodeSpaceUsed();
  assert.ok(after < before - 500_000, `bytecode space ${before} → ${after} bytes`);
  assert.equal(cachedDataVersionTag(), tag);
  assert.equal(kept[0]?.(7), kept[0]?.(7), 'a flushed function still runs: it is compiled again');
});

test("a flag's launch spelling: V8's default unless given, the command line after NODE_OPTIONS", () => {
  assert.equal(launchFlag('bytecode-old-age', '--bytecode-old-age=6', [], ''), '--bytecode-old-age=6');
  assert.equal(
    launchFlag('bytecode-old-age', '--bytecode-old-age=6', ['--max-semi-space-size=4'], '--bytecode_old_age=3'),
    '--bytecode-old-age=3',
  );
  assert.equal(
    launchFlag('bytecode-old-age', '--bytecode-old-age=6', ['--bytecode-old-age=2'], '--bytecode-old-age=9'),
    '--bytecode-old-age=2',
  );
  assert.equal(
    launchFlag('flush-baseline-code', '--no-flush-baseline-code', [], '--flush-baseline-code'),
    '--flush-baseline-code',
  );
  assert.equal(
    launchFlag('flush-baseline-code', '--no-flush-baseline-code', ['--flush-bytecode'], ''),
    '--no-flush-baseline-code',
  );
});
