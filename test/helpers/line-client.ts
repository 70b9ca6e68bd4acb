/**
 * A Python client as one long-lived process speaking JSON lines: a request
 * per call on its stdin, one answer line on its stdout, in order. The gRPC
 * and Arrow Flight reference clients run this way (grpcio.ts, flight.ts) so a
 * test pays their start-up once. Closed in t.after.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout } from 'node:timers/promises';
import type { After } from './gateway.ts';

export interface LineClient<Q, A> {
  call(request: Q): Promise<A>;
  /** The client's process (a benchmark reads its CPU time). */
  readonly pid: number;
}

/** Spawns `python script ...args(caFile)` with the gateway's CA written to a temporary file. */
export function startLineClient<Q, A>(
  t: After,
  python: string,
  script: string,
  caPem: string,
  args: (caFile: string) => string[],
): LineClient<Q, A> {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-client-'));
  writeFileSync(join(dir, 'ca.pem'), caPem);
  const child = spawn(python, [join(import.meta.dirname, script), ...args(join(dir, 'ca.pem'))], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  // A client that died is reported by the next call, not by an EPIPE crashing the test process.
  child.stdin.on('error', () => {});
  t.after(async () => {
    child.stdin.end(); // the client exits at the end of its input
    if (child.exitCode === null)
      await Promise.race([once(child, 'exit'), setTimeout(5_000).then(() => child.kill('SIGTERM'))]);
    rmSync(dir, { recursive: true, force: true });
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let queue: Promise<unknown> = Promise.resolve();
  return {
    pid: child.pid as number,
    call(request) {
      const answer = queue.then(async () => {
        child.stdin.write(`${JSON.stringify(request)}\n`);
        const next = await lines.next();
        if (next.done) throw new Error(`the ${script} client exited (see its stderr)`);
        return JSON.parse(String(next.value)) as A;
      });
      queue = answer.catch(() => {});
      return answer;
    },
  };
}
