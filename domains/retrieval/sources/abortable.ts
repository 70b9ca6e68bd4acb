/**
 * The read loop of a source that holds a connection (Kafka, HiveServer2):
 * the connection is closed when the signal aborts (so a pending call
 * returns at once) and when the read ends or is left; the read stops
 * between batches on abort, since one server response may hold several
 * batches; a failure is mapped to an ApiError by `classify`, except that an
 * abort stays an abort.
 */
import type { Row } from './types.ts';

export async function* abortableRead<T>(
  signal: AbortSignal,
  open: () => T | Promise<T>,
  close: (handle: T) => unknown,
  batches: (handle: T) => AsyncIterable<Row[]>,
  classify: (error: unknown) => Error,
): AsyncGenerator<Row[]> {
  let handle: T | undefined;
  const stop = () => {
    if (handle !== undefined) close(handle);
  };
  signal.addEventListener('abort', stop, { once: true });
  try {
    handle = await open();
    // An abort while opening found no handle to close.
    signal.throwIfAborted();
    for await (const batch of batches(handle)) {
      yield batch;
      signal.throwIfAborted();
    }
  } catch (error) {
    signal.throwIfAborted();
    throw classify(error);
  } finally {
    signal.removeEventListener('abort', stop);
    stop();
  }
}
