/**
 * A server-streaming gRPC method whose implementation yields its messages
 * already encoded, each a whole gRPC message (length prefix included), for
 * the Flight stream (flight.ts) whose record batches are built straight into
 * their frames. Connect encodes every message it sends itself
 * (toBinary, then a copy into its envelope); this handler takes the place
 * of Connect's handler for one method, inside the same router, and passes
 * the frames on as they are. Connect's own parts still do the rest: its
 * envelope, compression and timeout helpers read the request, and
 * connect-node's adapter writes the response (headers, backpressure,
 * trailers).
 *
 * Only gRPC with the protobuf codec is served here (`application/grpc`,
 * `application/grpc+proto`), the protocol Flight clients speak; any other
 * protocol or codec goes to Connect's own handler for the method.
 * Statuses follow gRPC over HTTP/2: `grpc-status` and `grpc-message` in the
 * trailers, as Connect's gRPC handler writes them.
 */
import type { DescMessage, DescMethodServerStreaming, MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createHandlerContext, type HandlerContext } from '@connectrpc/connect';
import {
  compressionNegotiate,
  createMethodSerializationLookup,
  pipe,
  transformDecompressEnvelope,
  transformParseEnvelope,
  transformSplitEnvelope,
  type UniversalHandler,
  type UniversalServerRequest,
  untilFirst,
  uResponseMethodNotAllowed,
  uResponseOk,
} from '@connectrpc/connect/protocol';
import {
  contentTypeProto,
  grpcStatusOk,
  headerAcceptEncoding,
  headerContentType,
  headerEncoding,
  headerGrpcStatus,
  headerTimeout,
  parseContentType,
  parseTimeout,
  setTrailerStatus,
} from '@connectrpc/connect/protocol-grpc';
import { compressionBrotli, compressionGzip } from '@connectrpc/connect-node';

/** A request message is a Ticket or the like: anything near this is not one. */
const READ_MAX_BYTES = 64 * 1024;
const LIMITS = { readMaxBytes: READ_MAX_BYTES, writeMaxBytes: 0xffffffff };
/** The longest grpc-timeout kept: a Node.js timer's limit (~24.8 days; a longer one fires at once); past it, none. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
/** What Connect's node adapter accepts on a request (connectNodeAdapter's default). */
const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];

export type FrameImplementation<I extends DescMessage> = (
  request: MessageShape<I>,
  context: HandlerContext,
) => AsyncIterable<Uint8Array>;

/** The one request message of a server-streaming call, as Connect's own handler insists on it. */
async function single<T>(messages: AsyncIterable<T>): Promise<T> {
  const it = messages[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done === true)
    throw new ConnectError('protocol error: missing input message for server-streaming method', Code.Unimplemented);
  if ((await it.next()).done !== true)
    throw new ConnectError(
      'protocol error: received extra input message for server-streaming method',
      Code.Unimplemented,
    );
  return first.value;
}

/** The status a failure ends the call with: its own, or INTERNAL without its details (as Connect's handlers do). */
const statusOf = (error: unknown): ConnectError =>
  error instanceof ConnectError
    ? error
    : new ConnectError('internal error', Code.Internal, undefined, undefined, error);

/**
 * Replaces Connect's handler for `method` in `handlers` (a router's, before
 * the adapter reads them) by one that streams the implementation's frames
 * for gRPC with protobuf, and leaves every other request to Connect's.
 */
export function serveFrames<I extends DescMessage, O extends DescMessage>(
  handlers: UniversalHandler[],
  method: DescMethodServerStreaming<I, O>,
  implementation: FrameImplementation<I>,
): void {
  const at = handlers.findIndex((h) => h.method === method);
  const connectHandler = handlers[at];
  if (connectHandler === undefined) throw new Error(`no handler for ${method.parent.typeName}/${method.name}`);
  const input = createMethodSerializationLookup(method, undefined, undefined, LIMITS).getI(true);

  async function handleFrames(req: UniversalServerRequest) {
    const asked = parseTimeout(req.header.get(headerTimeout), Number.MAX_SAFE_INTEGER);
    const timeout = (asked.timeoutMs ?? 0) > MAX_TIMEOUT_MS ? {} : asked;
    const context = createHandlerContext({
      service: method.parent,
      method,
      protocolName: 'grpc',
      requestMethod: req.method,
      url: req.url,
      timeoutMs: timeout.timeoutMs,
      requestSignal: req.signal,
      requestHeader: req.header,
      responseHeader: { [headerContentType]: contentTypeProto },
      responseTrailer: { [headerGrpcStatus]: grpcStatusOk },
      contextValues: req.contextValues,
    });
    const compression = compressionNegotiate(
      ACCEPT_COMPRESSION,
      req.header.get(headerEncoding),
      req.header.get(headerAcceptEncoding),
      headerAcceptEncoding,
    );
    async function* frames(): AsyncGenerator<Uint8Array> {
      try {
        if (compression.error) throw compression.error;
        if (timeout.error) throw timeout.error;
        const requests = pipe(
          req.body as AsyncIterable<Uint8Array>,
          transformSplitEnvelope(READ_MAX_BYTES),
          transformDecompressEnvelope(compression.request, READ_MAX_BYTES),
          transformParseEnvelope<MessageShape<I>>(input),
        );
        for await (const frame of implementation(await single(requests), context)) {
          // A deadline (grpc-timeout) ends the stream; a client that left ends the writes first.
          context.signal.throwIfAborted();
          yield frame;
        }
      } catch (error) {
        context.abort(error);
        setTrailerStatus(context.responseTrailer, statusOf(error));
      } finally {
        context.abort();
      }
    }
    return {
      ...uResponseOk,
      // The first frame (or the end) is awaited before the headers go out, as Connect's handlers do.
      body: await untilFirst(frames()),
      header: context.responseHeader,
      trailer: context.responseTrailer,
    };
  }

  const handler = async (req: UniversalServerRequest) => {
    const type = parseContentType(req.header.get(headerContentType));
    if (type === undefined || !type.binary) return connectHandler(req);
    if (req.method !== 'POST') return uResponseMethodNotAllowed;
    return handleFrames(req);
  };
  handlers[at] = Object.assign(handler, {
    protocolNames: connectHandler.protocolNames,
    allowedMethods: connectHandler.allowedMethods,
    supportedContentType: connectHandler.supportedContentType,
    requestPath: connectHandler.requestPath,
    service: connectHandler.service,
    method: connectHandler.method,
  });
}
