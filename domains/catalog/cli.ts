/**
 * `meshgate rotate-kek`: adds a KEK version and rewraps every secret's data
 * key under it, then retires the old versions (rotate.ts). Safe to run
 * beside a live gateway on the same data dir, and to run again after a
 * crash: the second run finishes the first.
 */
import { parseArgs } from 'node:util';
import type { CliCommand } from '../../gateway/module.ts';
import { KEK_ROTATION } from './rotate.ts';

const USAGE = 'meshgate rotate-kek [--batch <n>]';

/**
 * Test hook for the crash test (test/integration/domains/catalog/kek-rotation.test.ts):
 * the process kills itself with SIGKILL once this many data keys are rewrapped.
 */
const CRASH_HOOK = 'MESHGATE_TEST_ROTATE_CRASH_AFTER';

export const rotateKekCommand: CliCommand = {
  name: 'rotate-kek',
  summary: 'add a catalog key-encryption key version and rewrap all secret data keys',
  usage: USAGE,
  async run(args, env) {
    const { values } = parseArgs({ args, options: { batch: { type: 'string', default: '32' } } });
    const batchSize = Number(values.batch);
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
      env.err(`usage: ${USAGE}`);
      return 2;
    }
    const crashAfter = Number(process.env[CRASH_HOOK] ?? Number.POSITIVE_INFINITY);
    const domains = await env.boot(['auth', 'authz', 'catalog']);
    try {
      const report = domains.services.get(KEK_ROTATION)({
        batchSize,
        onProgress(rewrapped) {
          if (rewrapped >= crashAfter) process.kill(process.pid, 'SIGKILL');
        },
      });
      env.out(
        `${report.resumed ? 'resumed and finished' : 'finished'} rotation: active KEK v${report.active}, ` +
          `${report.rewrapped} data keys rewrapped, retired ${report.retired.map((v) => `v${v}`).join(', ') || 'none'}`,
      );
      return 0;
    } finally {
      await domains.close();
    }
  },
};
