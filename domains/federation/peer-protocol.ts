/**
 * The answering side of the peer protocol, `/api/cluster/remote/*`,
 * authenticated only by the PSK signature over headers
 * and body (gateway/mesh/canonical.ts). Transport-free: routes hand in the signed call. Each
 * accepted signature is recorded once (replays are refused), and every
 * success answer carries a response signature binding it to the request.
 */
import { type KeyObject, randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { validate } from '../../gateway/http/body.ts';
import {
  canonicalizeRequest,
  canonicalizeResponse,
  checkTimestamp,
  pskKey,
  SIGNATURE_MAX_AGE_SECONDS,
  SIGNATURE_MAX_FUTURE_SECONDS,
  signatureMatches,
  signCanonical,
  unixSeconds,
} from '../../gateway/mesh/canonical.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';
import { negotiateFeatures } from '../../gateway/mesh/features.ts';
import { type FederationContext, pskOf } from './context.ts';
import { FederationErrors } from './errors.ts';
import { MESH_HEADERS } from './peer-client.ts';
import { isKeyId, pskKeyId } from './psk-key-id.ts';
import { disconnectRequest, pairRequest } from './requests.ts';
import type { FederationRow } from './store.ts';

/** Pairing tolerates less skew than the mesh window: the clocks must differ by under 60 seconds. */
export const PAIRING_MAX_SKEW_SECONDS = 60;

export interface SignedCall {
  sourceClusterId: string;
  /** The PSK key id the caller names (X-KZ-Mesh-Key-Id, psk-key-id.ts), '' when none. */
  keyId: string;
  route: string;
  signature: string;
  ts: number;
  /** The path as received (the signed x-forwarded-uri). */
  path: string;
  rawBody: Buffer;
}

export interface PeerReply {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

function canonicalOf(call: SignedCall): string {
  return canonicalizeRequest({
    sourceClusterId: call.sourceClusterId,
    userId: '',
    roles: '',
    route: call.route,
    method: 'POST',
    uri: call.path,
    ts: call.ts,
    body: call.rawBody,
  });
}

/** Rows whose PSK verifies the call; the PSK travels only as this proof (never in the body). */
function signers(
  ctx: FederationContext,
  call: SignedCall,
  rows: readonly FederationRow[],
): { row: FederationRow; key: KeyObject }[] {
  const canonical = canonicalOf(call);
  const out: { row: FederationRow; key: KeyObject }[] = [];
  for (const row of rows) {
    const key = pskOf(ctx, row);
    if (key && signatureMatches(key, canonical, call.signature)) out.push({ row, key });
  }
  return out;
}

function acceptOnce(ctx: FederationContext, call: SignedCall, nowSeconds: number): void {
  const expiresAt = call.ts + SIGNATURE_MAX_AGE_SECONDS + SIGNATURE_MAX_FUTURE_SECONDS;
  if (!ctx.nonces.acceptOnce(call.signature, expiresAt, nowSeconds)) throw MeshErrors.make.signature_replayed();
}

function signedReply(
  ctx: FederationContext,
  call: SignedCall,
  key: KeyObject,
  body: Record<string, unknown>,
  status = 200,
): PeerReply {
  const ts = unixSeconds(ctx.now());
  // sendReply serializes with JSON.stringify as well, so the signed bytes are the sent bytes.
  const raw = JSON.stringify(body);
  const canonical = canonicalizeResponse({
    responderClusterId: ctx.local.id,
    requestSignature: call.signature,
    status,
    ts,
    body: raw,
  });
  return {
    status,
    body,
    headers: {
      [MESH_HEADERS.sourceClusterId]: ctx.local.id,
      [MESH_HEADERS.ts]: String(ts),
      [MESH_HEADERS.responseSignature]: signCanonical(key, canonical),
      [MESH_HEADERS.requestSignature]: call.signature,
    },
  };
}

function parseBody<S extends z.ZodType>(schema: S, raw: Buffer): z.infer<S> {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    value = undefined;
  }
  return validate(schema, value, 'body');
}

/**
 * A call without a key id (a meshgate from before key ids) may try this many WAITING records' PSKs, no more: the cost
 * of an unauthenticated call stays bounded whatever the number of WAITING records.
 */
export const UNKEYED_PAIR_CANDIDATES = 8;

/** A key no record holds: a key id that names no record still costs one signature check (see pairSigner). */
const NO_RECORD_KEY = pskKey(randomBytes(32).toString('hex'));

/**
 * The WAITING record a pair call is for, proven by its signature, at a bounded number of HMACs: with a key id, the one
 * record whose lookup digest it gives (one HMAC; two records sharing it share the PSK, psk_ambiguous once it
 * verifies); without one, every WAITING record while there are at most UNKEYED_PAIR_CANDIDATES, else a refusal. A key
 * id that names no record, or a record whose PSK does not verify, is the same refusal, invalid_signature.
 */
function pairSigner(ctx: FederationContext, call: SignedCall): { row: FederationRow; key: KeyObject } {
  if (!call.keyId) {
    if (ctx.records.countByStatus('WAITING') > UNKEYED_PAIR_CANDIDATES)
      throw FederationErrors.make.pairing_key_id_required({ max_candidates: UNKEYED_PAIR_CANDIDATES });
    return onlySigner(ctx, call, ctx.records.byStatus(['WAITING']).slice(0, UNKEYED_PAIR_CANDIDATES));
  }
  if (!isKeyId(call.keyId)) throw MeshErrors.make.invalid_signature();
  const named = ctx.records.waitingByKeyId(ctx.vault.keyIdLookup(call.keyId));
  if (named.length > 0) {
    const matches = signers(ctx, call, named.slice(0, 1));
    ctx.pairChecks.inc(1);
    if (matches.length === 0) throw MeshErrors.make.invalid_signature();
    if (named.length > 1) throw FederationErrors.make.psk_ambiguous({ candidates: named.length });
    return matches[0] as { row: FederationRow; key: KeyObject };
  }
  // A record no key id names yet (made by an older gateway on a shared database, during a rolling upgrade): the few
  // such records are tried as an unkeyed call's would be. With none, a check under a key no record holds, so that a
  // key id that names nothing costs what one that names a record does (its timing tells no hit from a miss).
  const unkeyed = ctx.records.waitingWithoutKeyId(UNKEYED_PAIR_CANDIDATES);
  if (unkeyed.length > 0) return onlySigner(ctx, call, unkeyed);
  signatureMatches(NO_RECORD_KEY, canonicalOf(call), call.signature);
  throw MeshErrors.make.invalid_signature();
}

/**
 * The one record among `rows` whose PSK verifies the call (none: invalid_signature; several: psk_ambiguous). A record
 * without a key id lookup gets its own now (from its PSK, not from the caller's header), so it is found by it next.
 */
function onlySigner(
  ctx: FederationContext,
  call: SignedCall,
  rows: readonly FederationRow[],
): { row: FederationRow; key: KeyObject } {
  const matches = signers(ctx, call, rows);
  ctx.pairChecks.inc(rows.length);
  const match = matches[0];
  if (!match) throw MeshErrors.make.invalid_signature();
  if (matches.length > 1) throw FederationErrors.make.psk_ambiguous({ candidates: matches.length });
  if (match.row.pskKeyId === null && match.row.role === 'receiver')
    ctx.records.update(match.row.id, { pskKeyId: ctx.vault.keyIdLookup(pskKeyId(match.key)) });
  return match;
}

/**
 * POST /remote/pair: the unique WAITING record whose PSK verifies becomes PAIRED with the initiator's identity and CA.
 */
export function remotePair(ctx: FederationContext, call: SignedCall): PeerReply {
  const nowSeconds = unixSeconds(ctx.now());
  const { row, key } = pairSigner(ctx, call);
  const skew = call.ts - nowSeconds;
  if (Math.abs(skew) >= PAIRING_MAX_SKEW_SECONDS)
    throw FederationErrors.make.pairing_clock_skew({ skew_seconds: skew });
  const body = parseBody(pairRequest, call.rawBody);
  if (body.local_cluster_id !== call.sourceClusterId.toLowerCase()) throw MeshErrors.make.invalid_signature();
  if (body.local_cluster_id === ctx.local.id)
    throw FederationErrors.make.peer_identity_aliases_local({ cluster_id: body.local_cluster_id });
  acceptOnce(ctx, call, nowSeconds);
  const at = ctx.now().toISOString();
  const paired = ctx.records.update(row.id, {
    remoteClusterId: body.local_cluster_id,
    remoteFederationId: body.local_federation_id ?? null,
    // The handshake overwrites the receiver's label with the initiator's advertised name.
    remoteClusterName: body.local_cluster_name,
    remoteIps: row.remoteIps.length > 0 ? row.remoteIps : body.local_ips,
    remoteCaPem: body.local_ca_cert,
    peerKcIssuerUrl: body.peer_kc_issuer_url ?? null,
    peerKcJwksUrl: body.peer_kc_jwks_url ?? null,
    peerBrokerClientId: body.peer_broker_client_id ?? null,
    peerBrokerClientSecretUrn: body.peer_broker_client_secret ?? null,
    meshFeatures: negotiateFeatures(body.mesh_features, ctx.meshFeatures, body.local_federation_id ?? null),
    status: 'PAIRED',
    lastActivity: at,
    updatedAt: at,
  });
  ctx.logger.info(
    { federation_id: paired.id, remote_cluster_id: paired.remoteClusterId },
    'federation paired (receiver)',
  );
  return signedReply(ctx, call, key, {
    federation_id: paired.id,
    cluster_id: ctx.local.id,
    cluster_name: ctx.local.name,
    ca_cert: ctx.local.caPem(),
    identity_mode: paired.identityMode,
    status: 'PAIRED',
    mesh_features: paired.meshFeatures,
  });
}

/** `federation_id` of a ping or disconnect body (the caller's own record id), read before the body is validated. */
function callerRecordId(raw: Buffer): string | null {
  try {
    const id = (JSON.parse(raw.toString('utf8')) as { federation_id?: unknown } | null)?.federation_id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/**
 * The record a paired peer's call belongs to: looked up by its cluster id, proven by the signature.
 * When several records between the same clusters verify (a PSK reused across pairings), the signed body's
 * federation_id names the caller's record, else the PAIRED one wins over a disconnected one.
 */
function pairedSigner(ctx: FederationContext, call: SignedCall): { row: FederationRow; key: KeyObject } {
  const nowSeconds = unixSeconds(ctx.now());
  const rows = ctx.records.byRemoteClusterId(call.sourceClusterId.toLowerCase(), ['PAIRED', 'DISCONNECTED']);
  const matches = signers(ctx, call, rows);
  const named = callerRecordId(call.rawBody);
  const namedMatch = matches.find((m) => named !== null && m.row.remoteFederationId === named);
  const match = namedMatch ?? matches.find((m) => m.row.status === 'PAIRED') ?? matches[0];
  if (!match) throw MeshErrors.make.invalid_signature();
  const window = checkTimestamp(call.ts, nowSeconds);
  if (!window.ok) throw MeshErrors.make[window.reason]();
  acceptOnce(ctx, call, nowSeconds);
  return match;
}

/**
 * POST /remote/ping: proves the pairing end to end and answers this cluster's id. A record that is no longer PAIRED
 * answers 403 federation_not_active signed with its PSK: the caller may end its side on that proof (reconcile.ts),
 * and only the holder of the PSK can give it.
 */
export function remotePing(ctx: FederationContext, call: SignedCall): PeerReply {
  const { row, key } = pairedSigner(ctx, call);
  if (row.status !== 'PAIRED') {
    const refusal = MeshErrors.make.federation_not_active({ status: row.status });
    return signedReply(ctx, call, key, { detail: { reason: refusal.reason, status: row.status } }, refusal.status);
  }
  ctx.records.update(row.id, { lastActivity: ctx.now().toISOString() });
  return signedReply(ctx, call, key, { cluster_id: ctx.local.id, cluster_name: ctx.local.name, status: 'PAIRED' });
}

/** POST /remote/disconnect: the peer asks us to drop the pairing; idempotent for an already disconnected record. */
export function remoteDisconnect(ctx: FederationContext, call: SignedCall): PeerReply {
  const { row, key } = pairedSigner(ctx, call);
  const body = parseBody(disconnectRequest, call.rawBody);
  if (body.cluster_id !== call.sourceClusterId.toLowerCase()) throw MeshErrors.make.invalid_signature();
  if (row.status === 'PAIRED') {
    const at = ctx.now().toISOString();
    ctx.records.update(row.id, {
      status: 'DISCONNECTED',
      statusReason: body.reason === 'deleted' ? 'peer_deleted' : 'peer_disconnect',
      lastActivity: at,
      updatedAt: at,
    });
    ctx.logger.info({ federation_id: row.id, reason: body.reason ?? null }, 'federation disconnected by peer');
  }
  return signedReply(ctx, call, key, { acknowledged: true, cluster_id: ctx.local.id, federation_id: row.id });
}
