/**
 * Shared plumbing for the real test peers (docs/test-peers.md): run the idempotent
 * install scripts in scripts/peers/, spawn a server as a child process, wait
 * until its output says it is ready, and stop it in t.after. A peer that
 * cannot start fails the test with its own output, never a silent skip.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import type { After } from '../gateway.ts';

export type { After };

const execFileAsync = promisify(execFile);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const OUTPUT_KEEP = 64 * 1024;
const live = new Set<ChildProcess>();

// A test process that dies without running its after hooks must not leave servers behind.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Runs scripts/peers/<name>.sh (installs what is missing, cached) and returns the last line it prints: a path. */
export async function peerScript(name: string, args: string[] = []): Promise<string> {
  const script = join(ROOT, 'scripts', 'peers', `${name}.sh`);
  try {
    const { stdout } = await execFileAsync('bash', [script, ...args], { maxBuffer: 1 << 20 });
    return stdout.trim().split('\n').at(-1) ?? '';
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(
      `test peer ${name}: scripts/peers/${name}.sh failed (run scripts/peers/install-all.sh): ${e.stderr || e.message}`,
    );
  }
}

/** A port in the unprivileged range below Linux's ephemeral range; callers retry on EADDRINUSE. */
export function randomPort(): number {
  return randomInt(20_000, 32_000);
}

export class PortInUseError extends Error {}

/** Starts something on a random port, trying another one when the port turns out to be taken. */
export async function withPortRetry<T>(start: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await start();
    } catch (error) {
      if (!(error instanceof PortInUseError) || i >= attempts) throw error;
    }
  }
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  uid?: number;
  gid?: number;
  /** Output that means the server is serving. */
  ready: RegExp;
  /** Output that means the chosen port was taken (start is retried by withPortRetry). */
  portInUse?: RegExp;
  timeoutMs?: number;
}

export class PeerProcess {
  #output = '';
  #exited: Promise<void>;
  #failed = false;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    live.add(child);
    const append = (chunk: Buffer) => {
      this.#output = (this.#output + chunk.toString('utf8')).slice(-OUTPUT_KEEP);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    this.#exited = new Promise((resolve) => {
      child.once('exit', () => resolve());
      // A spawn failure (ENOENT, EACCES) may never emit 'exit'.
      child.once('error', (error) => {
        this.#failed = true;
        append(Buffer.from(`spawn failed: ${error.message}\n`));
        resolve();
      });
    });
    this.#exited.then(() => live.delete(child));
  }

  /** The last 64 KiB of the server's stdout and stderr, for failure messages. */
  get output(): string {
    return this.#output;
  }

  get running(): boolean {
    return !this.#failed && this.child.exitCode === null && this.child.signalCode === null;
  }

  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const match = this.#output.match(pattern);
        if (match) return finish(() => resolve(match));
        if (!this.running)
          finish(() =>
            reject(
              new Error(
                `test peer ${this.name} exited (${this.child.exitCode ?? this.child.signalCode}):\n${this.#output}`,
              ),
            ),
          );
      };
      const timer = setTimeout(
        () =>
          finish(() => reject(new Error(`test peer ${this.name} not ready after ${timeoutMs} ms:\n${this.#output}`))),
        timeoutMs,
      );
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.child.stdout?.off('data', check);
        this.child.stderr?.off('data', check);
        this.child.off('exit', check);
        this.child.off('error', check);
        settle();
      };
      this.child.stdout?.on('data', check);
      this.child.stderr?.on('data', check);
      this.child.on('exit', check);
      this.child.on('error', check);
      check();
    });
  }

  /** SIGTERM (or the given signal), then SIGKILL after graceMs. Idempotent. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000): Promise<void> {
    if (this.running) {
      this.child.kill(signal);
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.#exited;
      clearTimeout(timer);
    }
  }
}

/** Spawns a server and resolves once its output matches `ready`; throws PortInUseError or the server's output. */
export async function spawnPeer(
  name: string,
  command: string,
  args: string[],
  options: SpawnOptions,
): Promise<PeerProcess> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    uid: options.uid,
    gid: options.gid,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const peer = new PeerProcess(name, child);
  try {
    await peer.waitFor(options.ready, options.timeoutMs ?? 30_000);
    return peer;
  } catch (error) {
    await peer.stop('SIGKILL');
    if (options.portInUse?.test(peer.output)) throw new PortInUseError(peer.output);
    throw error;
  }
}

/** A peer's throwaway folder and the server later spawned in it; both go away at stop() or in t.after. */
export interface PeerWorkspace {
  readonly dir: string;
  /**
   * JVM options that keep a Java peer's temp files in `dir`: java.io.tmpdir ignores TMPDIR and
   * defaults to /tmp, and HotSpot writes its perf-data file to /tmp/hsperfdata_<user> whatever
   * java.io.tmpdir says, so that file is turned off (only jstat-style monitoring reads it).
   */
  readonly jvmTempOptions: readonly string[];
  /** Records the spawned server (the last one, across port retries) so stop() ends it. */
  adopt(server: PeerProcess): PeerProcess;
  stop(): Promise<void>;
}

export function peerWorkspace(t: After, name: string, stopSignal: NodeJS.Signals = 'SIGTERM'): PeerWorkspace {
  const dir = mkdtempSync(join(tmpdir(), `meshgate-${name}-`));
  const javaTmp = join(dir, 'java-tmp');
  mkdirSync(javaTmp);
  let server: PeerProcess | undefined;
  const stop = async () => {
    await server?.stop(stopSignal, 10_000);
  };
  t.after(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    jvmTempOptions: ['-XX:-UsePerfData', `-Djava.io.tmpdir=${javaTmp}`],
    stop,
    adopt(spawned) {
      server = spawned;
      return spawned;
    },
  };
}
