/**
 * A complete answer before the whole request body arrived over HTTP/2 (a
 * 401 or 413 for a large upload, an upstream that replied without reading
 * it): the client keeps sending into a stream nobody reads, its flow-control
 * window closes, and the upload hangs until the client gives up. RFC 9113
 * §8.1 lets a server that has sent a complete response ask the client to
 * stop without error: RST_STREAM with NO_ERROR, sent here after the
 * response's last frame. (HTTP/1.1 needs nothing here: Node's server
 * discards a body no handler read, and a proxied body the upstream refused
 * ends with the connection, as curl and browsers expect.)
 */
import {
  constants,
  type Http2SecureServer,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';

function stopUnreadUpload(req: Http2ServerRequest): void {
  const stream = req.stream;
  // remoteClose: the client sent END_STREAM already (all its body is here, read or not).
  if (!stream.closed && stream.state?.remoteClose === 0) stream.close(constants.NGHTTP2_NO_ERROR);
}

/**
 * After the response's last frame, trailers included. The compat response
 * always waits for trailers (gRPC's status travels in them): on
 * 'wantTrailers' it queues them with setImmediate, and Node drops them once
 * the stream is closed, so the reset is queued one turn later still (Node
 * flushes pending frames before a RST_STREAM). A response without a body
 * ends with its HEADERS frame instead and never asks for trailers: a turn
 * after 'finish' its END_STREAM is out (localClose).
 */
function afterResponse(req: Http2ServerRequest, res: Http2ServerResponse): void {
  const stream = res.stream;
  const stop = (): void => {
    setImmediate(() => stopUnreadUpload(req));
  };
  if (stream.sentTrailers !== undefined || stream.state?.localClose === 1) {
    stop();
    return;
  }
  stream.once('wantTrailers', stop);
  setImmediate(() => {
    if (stream.state?.localClose !== 1) return;
    stream.off('wantTrailers', stop);
    stopUnreadUpload(req);
  });
}

export function endUnreadUploads(server: Http2SecureServer | Http2Server): void {
  server.on('request', (req: Http2ServerRequest, res: Http2ServerResponse) => {
    // Only a request with a body can be left uploading (a GET ends with its HEADERS frame: no listener on that path).
    // The stream's own 'finish' (its body is written); the compat response emits 'finish' only once the stream closed.
    if (req.httpVersionMajor === 2 && !req.stream.endAfterHeaders)
      res.stream.once('finish', () => afterResponse(req, res));
  });
}
