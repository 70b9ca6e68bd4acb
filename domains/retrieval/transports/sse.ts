/**
 * SSE transport: `text/event-stream` with `event: chunk`
 * frames `{sequence, data, metadata}`, `:` comment heartbeats while idle,
 * then `event: complete` `{event, rows, chunks, metadata}` or `event: error`
 * `{event, reason, message}`. Each frame waits for the socket to drain
 * before the next batch is read, and a client that goes away aborts the
 * read at the source.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { ApiError } from '../../../gateway/errors/api-error.ts';
import type { NodeResponse } from '../../../gateway/http/context.ts';
import { abortReason } from '../runs.ts';
import type { JobStream } from '../stream.ts';
import { footer } from './inline.ts';

function drained(res: NodeResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** `reason` and a message safe to show: an ApiError's own, never another error's text. */
export function describeFailure(error: unknown): { reason: string; message: string } {
  if (error instanceof ApiError) {
    const problem = typeof error.extra.problem === 'string' ? `: ${error.extra.problem}` : '';
    return { reason: error.reason, message: `${error.reason}${problem}` };
  }
  return { reason: 'stream_failed', message: 'the stream failed; see the gateway log' };
}

export async function streamSse(
  response: NodeResponse,
  stream: JobStream,
  heartbeatMs: number,
  logger: Logger,
): Promise<void> {
  const res = response as ServerResponse;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  let lastWrite = Date.now();
  /** A frame's parts as one write to the socket (corked), the chunk's bytes never joined into a string. */
  const write = async (...parts: (string | Buffer)[]) => {
    lastWrite = Date.now();
    res.cork();
    let flushed = true;
    for (const part of parts) flushed = res.write(part);
    res.uncork();
    if (!flushed) await drained(res);
  };
  const heartbeat = setInterval(() => {
    if (Date.now() - lastWrite >= heartbeatMs && !res.writableEnded) void write(': heartbeat\n\n');
  }, heartbeatMs);
  const onClose = () => stream.finish(res.writableFinished ? undefined : { reason: 'client_disconnected' });
  res.once('close', onClose);
  try {
    await write(`: retrieval job ${stream.job.id}\n\n`);
    for await (const chunk of stream.chunks) {
      if (res.destroyed) break;
      await write(
        `event: chunk\ndata: {"sequence":${chunk.sequence},"data":`,
        chunk.data,
        `,"metadata":${JSON.stringify(chunk.metadata)}}\n\n`,
      );
    }
    if (res.destroyed) return;
    const { rows, chunks } = stream.summary;
    const metadata = { filtered: stream.summary.filtered, ...footer(stream.summary) };
    res.end(`event: complete\ndata: ${JSON.stringify({ event: 'complete', rows, chunks, metadata })}\n\n`);
    stream.finish();
  } catch (thrown) {
    const error = stream.signal.aborted ? abortReason(stream.signal, stream.job.id) : thrown;
    if (!(error instanceof ApiError)) logger.error({ err: error, job_id: stream.job.id }, 'retrieval stream failed');
    stream.finish(error);
    if (!res.destroyed)
      res.end(`event: error\ndata: ${JSON.stringify({ event: 'error', ...describeFailure(error) })}\n\n`);
  } finally {
    clearInterval(heartbeat);
    res.off('close', onClose);
  }
}
