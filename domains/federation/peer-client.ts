/**
 * The calling side of the peer protocol: signs a JSON body
 * with the PSK under the mesh envelope (user id and roles empty, route =
 * this cluster, body hashed), sends it through the peer's agent, and checks
 * the answer's response signature. Transport failures become the stable
 * layer reasons of diagnose.
 */

import type { KeyObject } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import type { ApiError } from '../../gateway/errors/api-error.ts';
import {
  canonicalizeRequest,
  canonicalizeResponse,
  parseTs,
  signatureMatches,
  signCanonical,
  unixSeconds,
} from '../../gateway/mesh/canonical.ts';
import type { PeerAgent } from '../../gateway/mesh/peer-agent.ts';
import { classifyTransportError } from '../../gateway/mesh/transport-errors.ts';
import { FederationErrors } from './errors.ts';
import { KEY_ID_HEADER } from './psk-key-id.ts';

export type PeerPath = '/api/cluster/remote/pair' | '/api/cluster/remote/ping' | '/api/cluster/remote/disconnect';

export interface PeerAnswer {
  status: number;
  json: Record<string, unknown> | null;
  /** The answer carried a response signature that verifies under the PSK and binds to our request. */
  signed: boolean;
  /** The answer's signature timestamp (Unix seconds), NaN when absent. */
  ts: number;
  /** X-KZ-Mesh-Source-Cluster-Id of the answer (the responder), when signed. */
  responderId: string | null;
}

const MAX_ANSWER_BYTES = 1024 * 1024;

export const MESH_HEADERS = {
  sourceClusterId: 'x-kz-mesh-source-cluster-id',
  route: 'x-kz-mesh-route',
  signature: 'x-kz-mesh-signature',
  ts: 'x-kz-mesh-signature-ts',
  correlationId: 'x-kz-mesh-correlation-id',
  responseSignature: 'x-kz-mesh-response-signature',
  requestSignature: 'x-kz-mesh-request-signature',
} as const;

/**
 * Every body carries a fresh nonce, so two calls in the same second never share a signature (once-only cache).
 * `keyId`: the PSK's key id (psk-key-id.ts), sent on the pair call so the receiver checks one record.
 */
export async function callPeer(
  agent: PeerAgent,
  path: PeerPath,
  body: Record<string, unknown>,
  psk: KeyObject,
  localId: string,
  now: Date,
  keyId?: string,
): Promise<PeerAnswer> {
  const raw = Buffer.from(JSON.stringify({ ...body, nonce: randomUUID() }));
  const ts = unixSeconds(now);
  const canonical = canonicalizeRequest({
    sourceClusterId: localId,
    userId: '',
    roles: '',
    route: localId,
    method: 'POST',
    uri: path,
    ts,
    body: raw,
  });
  const signature = signCanonical(psk, canonical);
  let res: Awaited<ReturnType<typeof request>>;
  let text: Buffer;
  try {
    res = await request(`${agent.origin}${path}`, {
      method: 'POST',
      dispatcher: agent.agent,
      headers: {
        'content-type': 'application/json',
        [MESH_HEADERS.sourceClusterId]: localId,
        [MESH_HEADERS.route]: localId,
        [MESH_HEADERS.signature]: signature,
        [MESH_HEADERS.ts]: String(ts),
        [MESH_HEADERS.correlationId]: randomUUID(),
        ...(keyId ? { [KEY_ID_HEADER]: keyId } : {}),
      },
      body: raw,
    });
    text = await readCapped(res.body);
  } catch (error) {
    throw transportError(error);
  }
  return {
    status: res.statusCode,
    json: parseObject(text),
    ...answerProof(res.headers, res.statusCode, text, signature, psk),
  };
}

function answerProof(
  headers: Record<string, string | string[] | undefined>,
  status: number,
  body: Buffer,
  requestSignature: string,
  psk: KeyObject,
) {
  const ts = parseTs(headers[MESH_HEADERS.ts]);
  const presented = headers[MESH_HEADERS.responseSignature];
  const responder = headers[MESH_HEADERS.sourceClusterId];
  if (typeof presented !== 'string' || typeof responder !== 'string' || Number.isNaN(ts))
    return { signed: false, ts, responderId: null };
  const canonical = canonicalizeResponse({ responderClusterId: responder, requestSignature, status, ts, body });
  const signed = signatureMatches(psk, canonical, presented);
  return { signed, ts, responderId: signed ? responder : null };
}

async function readCapped(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES)
      throw Object.assign(new Error('peer answer too large'), { code: 'PEER_ANSWER_TOO_LARGE' });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function parseObject(raw: Buffer): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(raw.toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A thrown transport failure as the layer's stable reason (504 for timeouts), with the low-level code as `detail`. */
export function transportError(error: unknown): ApiError {
  const failure = classifyTransportError(error);
  return FederationErrors.make[failure.reason]({ layer: failure.layer, detail: failure.detail }, error);
}

/** The reason inside a peer's FastAPI-style error body, if any. */
export function peerReason(answer: PeerAnswer): string | null {
  const detail = answer.json?.detail;
  if (detail && typeof detail === 'object' && typeof (detail as { reason?: unknown }).reason === 'string')
    return (detail as { reason: string }).reason;
  return null;
}
