/**
 * Runs the real `meshgate` binary as a separate process (as an operator would, beside a running gateway), on the
 * database of the test gateway whose data dir it names.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { withTestDatabase } from './engine.ts';

export const MESHGATE_BIN = fileURLToPath(new URL('../../bin/meshgate', import.meta.url));

/** Exit code and stdout + stderr together. */
export function runMeshgate(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(MESHGATE_BIN, withTestDatabase(args), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.on('close', (code) => resolve({ code, out }));
  });
}
