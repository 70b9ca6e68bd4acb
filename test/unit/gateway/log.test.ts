/**
 * stdout's loggers as a gateway process holds them: access lines gathered into blocks must come out complete and in
 * order with the gateway's own lines, after close() and when the process exits without it.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { test } from 'node:test';

const LOG_MODULE = join(import.meta.dirname, '..', '..', '..', 'gateway', 'log.ts');

/** A process that writes `count` access lines with one of its own after every `every`. */
function scriptOf(count: number, every: number, closeFirst: boolean): string {
  return `
    const { createLoggers } = await import(${JSON.stringify(LOG_MODULE)});
    const logs = createLoggers('info');
    for (let n = 0; n < ${count}; n++) {
      logs.accessLog.write(JSON.stringify({ msg: 'request', n, pad: 'x'.repeat(200) }) + '\\n');
      if (n % ${every} === 0) logs.logger.info({ n }, 'own');
    }
    if (${closeFirst}) logs.close();`;
}

const parsed = (out: string) =>
  out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { msg: string; n: number });

/** Runs scriptOf's process and returns its lines. */
function linesOf(count: number, every: number, closeFirst: boolean): Array<{ msg: string; n: number }> {
  const script = scriptOf(count, every, closeFirst);
  return parsed(
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }),
  );
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

test('lines of any UTF-8 text and length come out whole and in order, across blocks', () => {
  // Multi-byte text (2, 3 and 4 bytes a character) fills blocks unevenly; some lines are longer than a block holds.
  const script = `
    const { createLoggers } = await import(${JSON.stringify(LOG_MODULE)});
    const logs = createLoggers('info');
    for (let n = 0; n < 600; n++) {
      const pad = n % 50 === 7 ? 'é€🙂'.repeat(9000) : 'é€🙂x'.repeat(n % 40);
      logs.accessLog.write(JSON.stringify({ msg: 'request', n, pad }) + '\\n');
    }
    logs.close();`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const lines = out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { n: number; pad: string });
  assert.deepEqual(
    lines.map((line) => line.n),
    Array.from({ length: 600 }, (_, n) => n),
  );
  for (const { n, pad } of lines) assert.equal(pad, n % 50 === 7 ? 'é€🙂'.repeat(9000) : 'é€🙂x'.repeat(n % 40));
});

test('lines gathered at exit reach a reader that drains the pipe late (a full pipe answers EAGAIN)', async () => {
  const script = scriptOf(4000, 4000, false);
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Nothing is read until the pipe has long been full: the exit's last block meets a pipe with no room.
  child.stdout.pause();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stdout.resume();
  const [code] = await once(child, 'close');
  assert.equal(code, 0);
  const access = parsed(out).filter((line) => line.msg === 'request');
  assert.deepEqual(
    access.map((line) => line.n),
    Array.from({ length: 4000 }, (_, n) => n),
  );
});
