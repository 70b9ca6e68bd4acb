/**
 * The file watchdog (test/helpers/file-watchdog.ts), fed a test file that passes but leaves a child process (and its
 * own child) with open pipes: the runner must end that file as failed, naming and killing both, instead of waiting
 * for ever.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { waitFor } from '../../helpers/wait.ts';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./fixtures/leaves-a-child.fixture.ts', import.meta.url));
const watchdog = fileURLToPath(new URL('../../helpers/file-watchdog.ts', import.meta.url));

const alive = (pid: number) => {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
};

test('a file that passes but leaves processes running fails after the grace, naming and killing them all', async () => {
  const args = ['--import', 'tsx', '--import', watchdog, '--test', '--test-reporter=tap', fixture];
  // Without this file's own runner context, or the inner node would take itself for one of its files.
  const { NODE_TEST_CONTEXT: _, ...outer } = process.env;
  const env = { ...outer, MESHGATE_TEST_WATCHDOG_MS: '500' };
  const failed = await run(process.execPath, args, { env, timeout: 60_000 }).then(
    () => assert.fail('the runner passed a file that never ended'),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
  const output = failed.stdout + failed.stderr;
  assert.equal(failed.code, 1, output);
  assert.match(output, /ok 1 - passes, and leaves a child and a grandchild behind/);
  const pid = Number(/left grandchild (\d+)/.exec(output)?.[1]);
  assert.match(
    output,
    new RegExp(`file watchdog: .*processes below it \\(killed\\): .*\\b${pid} \\(sleep\\).*\\(sh\\)`),
  );
  await waitFor(() => !alive(pid), { what: 'the left grandchild to be killed' });
});
