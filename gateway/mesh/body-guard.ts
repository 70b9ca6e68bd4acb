/**
 * Hardened mesh: checks a request body against the signed digest in
 * X-KZ-Mesh-Body-Sha256 while it streams to whichever handler reads it.
 * It must be installed synchronously when the request arrives, before the
 * parser pushes the first body chunk; the stream ends in an error instead
 * of its end when the bytes differ, so no handler sees a tampered body as
 * complete. The header itself is covered by the signature meshVerify checks.
 */
import { createHash } from 'node:crypto';
import type { Http2ServerRequest } from 'node:http2';
import type { NodeRequest } from '../http/context.ts';
import { MeshErrors } from './errors.ts';
import { MESH } from './headers.ts';

/** SHA-256 of no bytes: the digest a bodyless hardened request signs. */
export const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** Whether the request carries a body at all (HTTP/2: the headers frame did not end the stream). */
export function hasBody(req: NodeRequest): boolean {
  const stream = (req as Http2ServerRequest).stream;
  if (stream) return !stream.endAfterHeaders;
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

/**
 * A bodyless request is checked by meshVerify (digest must be EMPTY_SHA256).
 * With a body, a mismatch never ends the stream: a reader gets the 403
 * error instead, an unread body is simply dropped (the listener keeps that
 * quiet, and the socket is not destroyed so the answer can be sent).
 */
export function guardMeshBody(req: NodeRequest): void {
  const expected = req.headers[MESH.bodySha256];
  if (typeof expected !== 'string' || req.headers[MESH.signature] === undefined || !hasBody(req)) return;
  req.on('error', () => {});
  const hash = createHash('sha256');
  const push = req.push.bind(req);
  let ended = false;
  let refused = false;
  req.push = (chunk: unknown, encoding?: BufferEncoding) => {
    if (ended) return refused ? false : push(chunk, encoding);
    if (chunk !== null) {
      hash.update(chunk as Buffer);
      return push(chunk, encoding);
    }
    ended = true;
    if (hash.digest('hex') !== expected.toLowerCase()) {
      refused = true;
      // The end is withheld and readers get the refusal instead; the connection stays usable for the 403.
      process.nextTick(() => req.emit('error', MeshErrors.make.body_digest_mismatch()));
      return false;
    }
    return push(null);
  };
}
