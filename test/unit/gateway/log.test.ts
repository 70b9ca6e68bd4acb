/**
 * stdout's loggers as a gateway process holds them: access lines gathered into blocks must come out complete and in
 * order with the gateway's own lines, after close() and when the process exits without it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';

const LOG_MODULE = join(import.meta.dirname, '..', '..', '..', 'gateway', 'log.ts');

/** Runs a process that writes `count` access lines with one of its own after every `every`, and returns its lines. */
function linesOf(count: number, every: number, closeFirst: boolean): Array<{ msg: string; n: number }> {
  const script = `
    const { createLoggers } = await import(${JSON.stringify(LOG_MODULE)});
    const logs = createLoggers('info');
    for (let n = 0; n < ${count}; n++) {
      logs.accessLog.write(JSON.stringify({ msg: 'request', n, pad: 'x'.repeat(200) }) + '\\n');
      if (n % ${every} === 0) logs.logger.info({ n }, 'own');
    }
    if (${closeFirst}) logs.close();`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  return out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { msg: string; n: number });
}

for (const closeFirst of [true, false]) {
  test(`every access line comes out once, in order with the gateway's own (${closeFirst ? 'close()' : 'exit'})`, () => {
    const lines = linesOf(2000, 97, closeFirst);
    const access = lines.filter((line) => line.msg === 'request').map((line) => line.n);
    assert.deepEqual(
      access,
      Array.from({ length: 2000 }, (_, n) => n),
    );
    lines.forEach((line, at) => {
      if (line.msg !== 'own') return;
      const before = lines[at - 1];
      assert.deepEqual([before?.msg, before?.n], ['request', line.n], 'an own line follows the access line before it');
    });
    assert.equal(lines.filter((line) => line.msg === 'own').length, Math.ceil(2000 / 97));
  });
}
