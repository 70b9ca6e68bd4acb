/**
 * What the service and the transports share about a job's stream: the
 * open stream a transport drains, how a transport encodes a job's read and
 * opens it by stream token, where each protocol's stream is read, and how a
 * small result is answered inline. The service holds no transport; each
 * transport hands it these (transports/rpc.ts, index.ts).
 */
import type { RunTransport } from './metrics.ts';
import { type Chunk, chunksOf, type ReadPlan, type StreamSummary } from './pipeline.ts';
import type { JobRow } from './store.ts';
import type { StreamProtocol } from './tokens.ts';
import type { GrpcLocation, InlineBlock } from './wire.ts';

export type StreamLocations = Readonly<Record<StreamProtocol, (host: string) => GrpcLocation>>;

export type InlineCollector = (
  chunks: AsyncGenerator<Chunk>,
  summary: StreamSummary,
  thresholdBytes: number,
) => Promise<InlineBlock | null>;

/** Turns a job's read plan into the items a transport sends (JSON chunks, Arrow messages), and counts them. */
export interface StreamEncoder<T> {
  readonly encode: (plan: ReadPlan, columns: readonly string[] | null, summary: StreamSummary) => AsyncGenerator<T>;
  readonly size: (item: T) => [rows: number, bytes: number];
}

/** The JSON chunks SSE and platform.retrieval.v1 send. */
export const JSON_CHUNKS: StreamEncoder<Chunk> = { encode: chunksOf, size: (c) => [c.rowCount, c.data.length] };

/** How a transport that reads by stream token opens a job's stream. */
export interface StreamReader<T> {
  readonly protocol: StreamProtocol;
  readonly transport: RunTransport;
  /** A single-use token is spent by the first open (Arrow Flight); others may be re-used (resume). */
  readonly singleUse: boolean;
  /** Loaded before a single-use token is spent: a library that fails to load leaves the token for the next try. */
  encoder(): Promise<StreamEncoder<T>>;
}

/** One open stream of a job. The transport drains `chunks`, then calls finish() exactly once. */
export interface JobStream<T = Chunk> {
  readonly job: JobRow;
  readonly chunks: AsyncGenerator<T>;
  readonly summary: StreamSummary;
  readonly signal: AbortSignal;
  finish(error?: unknown): void;
}
