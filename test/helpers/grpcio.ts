/**
 * gRPC's reference client, Python grpcio (scripts/peers/grpcio.sh,
 * test/helpers/grpcio_client.py), as one long-lived process: a job per call,
 * answered in order. Used by the interoperability tests and the retrieval
 * benchmark. Closed in t.after.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout } from 'node:timers/promises';
import type { After } from './gateway.ts';
import { peerScript } from './peers/process.ts';
import type { Row } from './retrieval.ts';

export interface GrpcioJob {
  /** The job's `grpc.endpoint`, `grpcs://host:port`. */
  endpoint: string;
  job_id: string;
  token: string;
  from_sequence?: number;
  /** Where the token goes: the request's `token` field (default) or `authorization: Bearer` metadata. */
  token_in?: 'request' | 'metadata';
  /** Also return every chunk's header and the rows. */
  detail?: boolean;
}

export interface GrpcioResult {
  rows: number;
  bytes: number;
  seconds: number;
  chunks?: { sequence: number; row_count: number; final: boolean; metadata: Record<string, string> }[];
  data?: Row[];
  /** A failed call: the gRPC status name (e.g. UNAUTHENTICATED) and its message. */
  error?: { code: string; details: string };
}

export interface GrpcioClient {
  stream(job: GrpcioJob): Promise<GrpcioResult>;
}

export async function startGrpcioClient(t: After, caPem: string): Promise<GrpcioClient> {
  const python = await peerScript('grpcio');
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-grpcio-'));
  writeFileSync(join(dir, 'ca.pem'), caPem);
  const child = spawn(python, [join(import.meta.dirname, 'grpcio_client.py'), join(import.meta.dirname, '..', '..'), join(dir, 'ca.pem')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  // A client that died is reported by the next stream() call, not by an EPIPE crashing the test process.
  child.stdin.on('error', () => {});
  t.after(async () => {
    child.stdin.end(); // the client exits at the end of its input (and removes its stubs)
    if (child.exitCode === null) await Promise.race([once(child, 'exit'), setTimeout(5_000).then(() => child.kill('SIGTERM'))]);
    rmSync(dir, { recursive: true, force: true });
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let queue: Promise<unknown> = Promise.resolve();
  return {
    stream(job) {
      const answer = queue.then(async () => {
        child.stdin.write(`${JSON.stringify(job)}\n`);
        const next = await lines.next();
        if (next.done) throw new Error('the grpcio client exited (see its stderr)');
        return JSON.parse(String(next.value)) as GrpcioResult;
      });
      queue = answer.catch(() => {});
      return answer;
    },
  };
}
