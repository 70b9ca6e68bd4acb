/**
 * meshSign: the undici interceptor that signs a mesh request.
 * Composed closest to the socket, so a retried dispatch is re-signed with a
 * fresh timestamp and nonce. It reads the identity headers egress already
 * set, builds the ONE canonical form (canonical.ts) and only sets headers.
 */

import type { KeyObject } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { canonicalizeRequest, sha256Hex, signCanonical } from './canonical.ts';
import type { MeshFeature } from './directory.ts';
import { MESH } from './headers.ts';

export interface SignOptions {
  key: KeyObject;
  features: ReadonlySet<MeshFeature>;
  /** Unix seconds; injected so tests control the clock. */
  nowSeconds(): number;
  nonce?(): string;
}

const newNonce = () => randomBytes(16).toString('hex');

/** The signed subset of an outbound mesh request (headers set by egress, lowercased). */
export function signHeaders(
  headers: Record<string, string>,
  method: string,
  path: string,
  body: unknown,
  options: SignOptions,
): Record<string, string> {
  const out = { ...headers };
  const q = path.indexOf('?');
  const ts = options.nowSeconds();
  if (options.features.has('nonce')) out[MESH.nonce] = (options.nonce ?? newNonce)();
  if (options.features.has('body-sha256')) out[MESH.bodySha256] = sha256Hex(Buffer.isBuffer(body) ? body : '');
  const canonical = canonicalizeRequest({
    sourceClusterId: out[MESH.sourceClusterId] ?? '',
    userId: out[MESH.userId] ?? '',
    roles: out[MESH.userRoles] ?? '',
    route: out[MESH.route] ?? '',
    method,
    uri: q === -1 ? path : path.slice(0, q),
    ts,
    peerToken: out[MESH.peerToken],
    userAttributes: out[MESH.userAttributes],
    bodySha256: out[MESH.bodySha256],
    nonce: out[MESH.nonce],
    federationId: out[MESH.federationId],
  });
  out[MESH.ts] = String(ts);
  out[MESH.signature] = signCanonical(options.key, canonical);
  return out;
}

export function meshSign(options: SignOptions): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => {
    const headers = signHeaders(opts.headers as Record<string, string>, opts.method, opts.path, opts.body, options);
    return dispatch({ ...opts, headers }, handler);
  };
}
