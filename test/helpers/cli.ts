/** Runs the real `meshgate` binary as a separate process (as an operator would, beside a running gateway). */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const MESHGATE_BIN = fileURLToPath(new URL('../../bin/meshgate', import.meta.url));

/** Exit code and stdout + stderr together. */
export function runMeshgate(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(MESHGATE_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
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
