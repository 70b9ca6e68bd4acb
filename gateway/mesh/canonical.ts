/**
 * The mesh signature envelope: ONE pure
 * canonicalization shared by every signer and verifier (the mesh proxy's
 * meshSign/meshVerify and the federation peer protocol), so they cannot
 * drift apart. HMAC-SHA256 keyed with the pairing PSK, lower
 * hex, compared in constant time; the clock is always injected.
 */
import { createHash, createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';

/** Accepted signature age and future skew. */
export const SIGNATURE_MAX_AGE_SECONDS = 300;
export const SIGNATURE_MAX_FUTURE_SECONDS = 60;

export interface CanonicalFields {
  /** X-KZ-Mesh-Source-Cluster-Id (lowercased in the canonical form). */
  sourceClusterId: string;
  /** X-KZ-Mesh-User-Id, verbatim ('' for peer-protocol calls). */
  userId: string;
  /** X-KZ-Mesh-User-Roles CSV, as sent (no re-sorting). */
  roles: string;
  /** X-KZ-Mesh-Route CSV, as sent. */
  route: string;
  /** HTTP method (uppercased in the canonical form). */
  method: string;
  /** Path only, still percent-encoded; any query is dropped. */
  uri: string;
  /** X-KZ-Mesh-Signature-Ts, Unix seconds. */
  ts: number;
  /** Raw X-KZ-Mesh-Peer-Token, hashed into the envelope; absent → ''. */
  peerToken?: string | null | undefined;
  /** Raw X-KZ-Mesh-User-Attributes header bytes, hashed; absent → ''. */
  userAttributes?: string | null | undefined;
  /** Peer-protocol calls only: the raw request body, hashed. Mesh proxy: absent → ''. */
  body?: Buffer | string | null | undefined;
  /** Hardened mesh (negotiated at pairing): the body digest (lower hex) when the body itself is streamed. */
  bodySha256?: string | undefined;
  /** Hardened mesh: the per-request nonce; adds one line, so the spec form is unchanged without it. */
  nonce?: string | undefined;
  /** Hardened mesh: the receiver's federation record id the request names; adds one line, after the nonce. */
  federationId?: string | undefined;
}

export function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

function optionalHash(value: Buffer | string | null | undefined): string {
  return value === undefined || value === null || value.length === 0 ? '' : sha256Hex(value);
}

/** The canonical string both sides sign: ten `name:value` lines joined by '\n' (docs/mesh.md). */
export function canonicalizeRequest(fields: CanonicalFields): string {
  const q = fields.uri.indexOf('?');
  return [
    `x-kz-mesh-source-cluster-id:${fields.sourceClusterId.toLowerCase()}`,
    `x-kz-mesh-user-id:${fields.userId}`,
    `x-kz-mesh-user-roles:${fields.roles}`,
    `x-kz-mesh-route:${fields.route}`,
    `x-forwarded-method:${fields.method.toUpperCase()}`,
    `x-forwarded-uri:${q === -1 ? fields.uri : fields.uri.slice(0, q)}`,
    `x-kz-mesh-signature-ts:${fields.ts}`,
    `x-kz-mesh-peer-token-sha256:${optionalHash(fields.peerToken)}`,
    `x-kz-mesh-user-attributes-sha256:${optionalHash(fields.userAttributes)}`,
    `x-kz-mesh-body-sha256:${fields.bodySha256 ?? optionalHash(fields.body)}`,
    ...(fields.nonce === undefined ? [] : [`x-kz-mesh-nonce:${fields.nonce}`]),
    ...(fields.federationId === undefined ? [] : [`x-kz-mesh-federation-id:${fields.federationId.toLowerCase()}`]),
  ].join('\n');
}

export interface ResponseCanonicalFields {
  /** The answering cluster's id. */
  responderClusterId: string;
  /** The X-KZ-Mesh-Signature of the request being answered: binds the answer to it. */
  requestSignature: string;
  status: number;
  ts: number;
  body: Buffer | string;
}

/**
 * The response proof of a peer-protocol answer (the
 * X-KZ-Mesh-Response-Signature headers of FAPI13): the initiator accepts the
 * receiver's CA only when this verifies under the same PSK.
 */
export function canonicalizeResponse(fields: ResponseCanonicalFields): string {
  return [
    `x-kz-mesh-response-cluster-id:${fields.responderClusterId.toLowerCase()}`,
    `x-kz-mesh-request-signature:${fields.requestSignature.toLowerCase()}`,
    `x-kz-mesh-response-status:${fields.status}`,
    `x-kz-mesh-signature-ts:${fields.ts}`,
    `x-kz-mesh-body-sha256:${optionalHash(fields.body)}`,
  ].join('\n');
}

/** The PSK as a KeyObject, so raw key bytes are not passed around as strings. */
export function pskKey(psk: string): KeyObject {
  return createSecretKey(Buffer.from(psk, 'utf8'));
}

export function signCanonical(key: KeyObject, canonical: string): string {
  return createHmac('sha256', key).update(canonical, 'utf8').digest('hex');
}

export type SignatureCheck =
  | { ok: true }
  | { ok: false; reason: 'invalid_signature' | 'signature_expired' | 'signature_in_future' };

/** Constant-time comparison of a presented hex signature with the expected one. */
export function signatureMatches(key: KeyObject, canonical: string, presented: string): boolean {
  const expected = Buffer.from(signCanonical(key, canonical), 'hex');
  if (!/^[0-9a-fA-F]{64}$/.test(presented)) return false;
  return timingSafeEqual(expected, Buffer.from(presented, 'hex'));
}

/** The timestamp window: at most 300 s old (a replayed capture ages out), at most 60 s ahead (clock skew). */
export function checkTimestamp(
  ts: number,
  nowSeconds: number,
  window = { maxAge: SIGNATURE_MAX_AGE_SECONDS, maxFuture: SIGNATURE_MAX_FUTURE_SECONDS },
): SignatureCheck {
  if (!Number.isSafeInteger(ts)) return { ok: false, reason: 'invalid_signature' };
  if (nowSeconds - ts > window.maxAge) return { ok: false, reason: 'signature_expired' };
  if (ts - nowSeconds > window.maxFuture) return { ok: false, reason: 'signature_in_future' };
  return { ok: true };
}

/** Timestamp window first (cheap, no key use), then the HMAC. */
export function verifySignature(
  key: KeyObject,
  fields: CanonicalFields,
  presented: string,
  nowSeconds: number,
): SignatureCheck {
  const window = checkTimestamp(fields.ts, nowSeconds);
  if (!window.ok) return window;
  return signatureMatches(key, canonicalizeRequest(fields), presented)
    ? { ok: true }
    : { ok: false, reason: 'invalid_signature' };
}

/** Parses X-KZ-Mesh-Signature-Ts: an integer string of Unix seconds, else NaN. */
export function parseTs(header: string | string[] | undefined): number {
  return typeof header === 'string' && /^\d{1,12}$/.test(header) ? Number(header) : Number.NaN;
}

export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
