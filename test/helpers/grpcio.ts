/**
 * gRPC's reference client, Python grpcio (scripts/peers/grpcio.sh,
 * test/helpers/grpcio_client.py), as one long-lived process: a job per call,
 * answered in order. Used by the interoperability tests and the retrieval
 * benchmark. Closed in t.after.
 */
import { join } from 'node:path';
import type { After } from './gateway.ts';
import { startLineClient } from './line-client.ts';
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
  const client = startLineClient<GrpcioJob, GrpcioResult>(t, python, 'grpcio_client.py', caPem, (ca) => [
    join(import.meta.dirname, '..', '..'),
    ca,
  ]);
  return { stream: (job) => client.call(job) };
}
