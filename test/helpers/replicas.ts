/**
 * Upstream replicas as real processes (test/helpers/replica-server.ts) that a test can kill with SIGKILL and start
 * again on the same port, as a crashed and restarted model server would be. Each is stopped in t.after.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { After } from './gateway.ts';

export interface ReplicaProcess {
  readonly name: string;
  readonly url: string;
  /** Request bodies it read, as the lengths it logged (POST /echo and /drop), since it was first started. */
  readonly received: number[];
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  restart(): Promise<void>;
}

const SCRIPT = join(import.meta.dirname, 'replica-server.ts');

async function launch(name: string, port: number, received: number[]): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [SCRIPT, name, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const listening = new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`replica ${name} exited (${code}) before listening`)));
    lines.on('line', (line) => {
      const [word, value] = line.split(' ');
      if (word === 'listening') resolve(Number(value));
      if (word === 'received') received.push(Number(value));
    });
  });
  return { child, port: await listening };
}

export async function startReplica(t: After, name: string): Promise<ReplicaProcess> {
  const received: number[] = [];
  let { child, port } = await launch(name, 0, received);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };
  t.after(stop);
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    received,
    kill: stop,
    async restart() {
      ({ child, port } = await launch(name, port, received));
    },
  };
}
