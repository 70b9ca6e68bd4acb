/**
 * Hardened mesh: checks a request body against the signed digest in
 * X-KZ-Mesh-Body-Sha256 while it streams to whichever handler reads it.
 * It must be installed synchronously when the request arrives, before the
 * parser pushes the first body chunk; the stream ends in an error instead
 * of its end when the bytes differ, so no handler sees a tampered body as
 * complete. The header itself is covered by the signature meshVerify checks.
 */
import { createHash } from 'node:crypto';
import type { NodeRequest } from '../http/context.ts';
import { MeshErrors } from './errors.ts';
import { MESH } from './headers.ts';

export function guardMeshBody(req: NodeRequest): void {
  const expected = req.headers[MESH.bodySha256];
  if (typeof expected !== 'string' || req.headers[MESH.signature] === undefined) return;
  const hash = createHash('sha256');
  const push = req.push.bind(req);
  let ended = false;
  req.push = (chunk: unknown, encoding?: BufferEncoding) => {
    if (ended) return push(chunk, encoding);
    if (chunk !== null) {
      hash.update(chunk as Buffer);
      return push(chunk, encoding);
    }
    ended = true;
    if (hash.digest('hex') !== expected.toLowerCase()) {
      req.destroy(MeshErrors.make.body_digest_mismatch());
      return false;
    }
    return push(null);
  };
}
