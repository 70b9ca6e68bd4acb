/**
 * gRPC transport: `platform.retrieval.v1.RetrievalService/
 * StreamData`, server streaming, served by Connect-RPC on the TLS listener.
 * The chunk payload is the UTF-8 JSON array of rows — the same bytes the
 * SSE stream sends, encoded once per batch and passed on without a copy,
 * so no per-row protobuf encoding; the terminal message has `final =
 * true`, an empty payload and the footer in `metadata`. The token comes in the request or as
 * `authorization: Bearer <token>`; `from_sequence` resumes a stream.
 */
import { create } from '@bufbuild/protobuf';
import type { ConnectRouter, HandlerContext } from '@connectrpc/connect';
import { toConnectError } from '../../../gateway/errors/connect-error.ts';
import { RPC_CONTEXT } from '../../../gateway/routing/rpc-adapter.ts';
import {
  type DataChunk,
  DataChunkSchema,
  RetrievalService as RetrievalRpc,
} from '../../../proto/gen/platform/retrieval/v1/retrieval_pb.ts';
import { RetrievalErrors } from '../errors.ts';
import type { Chunk, ChunkMetadata } from '../pipeline.ts';
import { abortReason } from '../runs.ts';
import type { RetrievalService } from '../service.ts';
import { type JobStream, JSON_CHUNKS, type StreamReader } from '../stream.ts';
import { footer } from './inline.ts';

const V1_READER: StreamReader<Chunk> = {
  protocol: 'platform.retrieval.v1',
  transport: 'grpc',
  singleUse: false,
  encoder: async () => JSON_CHUNKS,
};

function stringMap(metadata: ChunkMetadata | Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata))
    out[key] = typeof value === 'string' ? value : JSON.stringify(value);
  return out;
}

function tokenOf(given: string, authorization: string | null): string {
  if (given) return given;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match) throw RetrievalErrors.make.grpc_token_invalid({ problem: 'missing' });
  return match[1] as string;
}

function finalChunk(stream: JobStream): DataChunk {
  const { rows, chunks, filtered } = stream.summary;
  const metadata = stringMap({ ...footer(stream.summary), filtered, rows, chunks });
  return create(DataChunkSchema, {
    sequence: BigInt(chunks + 1),
    mediaType: 'application/json',
    final: true,
    metadata,
  });
}

/**
 * Stream messages are never compressed, whatever `grpc-accept-encoding`
 * offers (Connect's clients offer gzip by default): gzip of every chunk
 * cost more CPU on the gateway and the client than the whole rest of the
 * stream (bench/README.md, retrieval). Per-message flag 0 is plain gRPC;
 * compressed requests are still accepted.
 */
export const UNCOMPRESSED = { compressMinBytes: Number.MAX_SAFE_INTEGER };

/** Opens a job's stream for an RPC; a refusal becomes its Connect status. */
export async function openForRpc<T>(open: () => Promise<JobStream<T>>): Promise<JobStream<T>> {
  try {
    return await open();
  } catch (error) {
    throw toConnectError(error);
  }
}

/**
 * An RPC's messages over a job's stream, ending the job exactly once:
 * COMPLETED once the last message was taken, else FAILED with the error's
 * reason (a cancel of the job shows as retrieval_job_canceled, its reader
 * disabled as retrieval_reader_disabled), and the
 * client's disconnect ends the read.
 */
export async function* drained<T, M>(
  stream: JobStream<T>,
  context: HandlerContext,
  messages: AsyncIterable<M>,
): AsyncGenerator<M> {
  const disconnected = () => stream.finish({ reason: 'client_disconnected' });
  context.signal.addEventListener('abort', disconnected, { once: true });
  try {
    yield* messages;
    stream.finish();
  } catch (thrown) {
    const error = stream.signal.aborted && !context.signal.aborted ? abortReason(stream.signal, stream.job.id) : thrown;
    if (!(error instanceof Error && error.name === 'ApiError'))
      context.values.get(RPC_CONTEXT)?.logger.error({ err: error }, 'retrieval rpc failed');
    stream.finish(error);
    throw toConnectError(error);
  } finally {
    context.signal.removeEventListener('abort', disconnected);
  }
}

/** The stream's chunks from sequence `from` on (a resumed read), then the final one. */
async function* dataChunks(stream: JobStream, from: number): AsyncGenerator<DataChunk> {
  for await (const chunk of stream.chunks) {
    if (chunk.sequence < from) continue;
    yield create(DataChunkSchema, {
      sequence: BigInt(chunk.sequence),
      payload: chunk.data,
      mediaType: 'application/json',
      rowCount: BigInt(chunk.rowCount),
      metadata: stringMap(chunk.metadata),
    });
  }
  yield finalChunk(stream);
}

export function registerRetrievalRpc(router: ConnectRouter, service: RetrievalService): void {
  router.service(
    RetrievalRpc,
    {
      async *streamData(request, context) {
        const stream = await openForRpc(() =>
          service.tokenStream(
            request.jobId,
            tokenOf(request.token, context.requestHeader.get('authorization')),
            V1_READER,
          ),
        );
        yield* drained(stream, context, dataChunks(stream, Number(request.fromSequence)));
      },
    },
    UNCOMPRESSED,
  );
}
