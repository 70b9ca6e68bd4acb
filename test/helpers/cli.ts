/**
 * Runs the real `meshgate` (test/helpers/artifact.ts) as a separate process (as an operator would, beside a running
 * gateway), on the database of the test gateway whose data dir it names.
 */
import { spawn } from 'node:child_process';
import { meshgateLaunch } from './artifact.ts';
import { withTestDatabase } from './engine.ts';

/** Exit code and stdout + stderr together. */
export function runMeshgate(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const launch = meshgateLaunch(withTestDatabase(args));
    const child = spawn(launch.file, launch.args, { env: launch.env, stdio: ['ignore', 'pipe', 'pipe'] });
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
