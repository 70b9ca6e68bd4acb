/**
 * meshVerify: the ingress stage for a request carrying X-KZ-Mesh-Signature.
 * In order: one value per
 * envelope header, the peer record (the one the signed federation id names,
 * else the source cluster's records), the timestamp window, the HMAC over
 * the ONE canonical form (constant time), PAIRED,
 * hop limit and loop, then the negotiated hardening (nonce replay, body
 * digest). Every envelope failure is a 403 without `rebac_denied`. The
 * caller is then admitted by the directory (identity mode, allowlist,
 * provisioning) and the route runs as that local brokered principal.
 */

import type { Config } from '../config/schema.ts';
import type { SqlConnection } from '../db/connection.ts';
import type { ApiError } from '../errors/api-error.ts';
import type { RequestContext } from '../http/context.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import type { Stage, StageResult } from '../pipeline/stage.ts';
import { EMPTY_SHA256, hasBody } from './body-guard.ts';
import { canonicalizeRequest, checkTimestamp, parseTs, signatureMatches, unixSeconds } from './canonical.ts';
import type { MeshDirectory, MeshEnvelope, MeshPeer } from './directory.ts';
import { MeshErrors } from './errors.ts';
import { MAX_HOPS, MESH, parseRoute, rawValues } from './headers.ts';
import { MESH_SIGNATURES } from './metrics.ts';
import { ReplayCache } from './replay.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ENVELOPE = Object.values(MESH);

type Headers = Partial<Record<(typeof MESH)[keyof typeof MESH], string>>;
/** What one candidate record's key says about a request: verified, or the problem reported when it is the only one. */
type Proof = 'ok' | 'hardening_missing' | 'hmac_mismatch';

/** Each envelope header at most once (a repeated one is smuggling); null when not. */
export function readEnvelopeHeaders(rawHeaders: readonly string[]): Headers | null {
  const out: Headers = {};
  for (const name of ENVELOPE) {
    const values = rawValues(rawHeaders, name);
    if (values.length > 1) return null;
    if (values.length === 1) out[name] = values[0] as string;
  }
  return out;
}

export interface VerifyDeps {
  directory: MeshDirectory;
  /** The shared database: the replay cache lives there, so every process refuses a nonce any of them accepted. */
  sql: SqlConnection;
  mesh: Config['mesh'];
  metrics: MetricsRegistry;
  now(): Date;
}

/** The outcome label of a refusal: the envelope problem when there is one (all fixed names), else the reason. */
function outcomeOf(error: unknown): string {
  const refusal = error as Partial<ApiError>;
  const problem = refusal.extra?.problem;
  return typeof problem === 'string' ? problem : (refusal.reason ?? 'error');
}

export function createMeshVerifyStage(deps: VerifyDeps): Stage {
  const replay = new ReplayCache(deps.sql, deps.mesh.replayCacheSize);
  const window = { maxAge: deps.mesh.signatureTtlSeconds, maxFuture: deps.mesh.signatureFutureSkewSeconds };
  const invalid = (problem: string) => MeshErrors.make.invalid_signature({ problem });
  const outcomes = deps.metrics.counter(MESH_SIGNATURES);

  /**
   * The records that may have signed: the one the envelope names by its signed federation id, else every record
   * pinned to the source cluster that names none. Never chosen by Host, SNI or address: two pairings between the
   * same clusters share all of those, and a record's key is the only proof of which one is speaking.
   */
  function candidates(h: Headers, source: string): MeshPeer[] {
    const named = h[MESH.federationId];
    if (named !== undefined) {
      const peer = UUID.test(named) ? deps.directory.byFederationId(named) : undefined;
      // One answer for unknown, foreign and unnegotiated ids: the reply does not reveal which records exist.
      if (!peer || peer.remoteClusterId.toLowerCase() !== source || !peer.features.includes('federation-id')) {
        throw invalid('unknown_federation');
      }
      return [peer];
    }
    const records = deps.directory.bySourceCluster(source).filter((peer) => deps.directory.key(peer) !== null);
    // A record that negotiated the federation id is selected by it only: stripping the header is no downgrade.
    const unnamed = records.filter((peer) => !peer.features.includes('federation-id'));
    if (unnamed.length === 0) throw invalid(records.length > 0 ? 'hardening_missing' : 'unknown_source');
    return unnamed;
  }

  /** Verifies the HMAC with this record's key over the canonical form its negotiated hardening defines. */
  function proves(ctx: RequestContext, h: Headers, ts: number, peer: MeshPeer): Proof {
    const hardened = new Set(peer.features);
    if (hardeningMissing(h, hardened)) return 'hardening_missing';
    const key = deps.directory.key(peer);
    return key && signatureMatches(key, canonicalOf(ctx, h, ts, hardened), h[MESH.signature] ?? '')
      ? 'ok'
      : 'hmac_mismatch';
  }

  /**
   * The one record among those whose key verified. Several happen only when a peer that names no record reused a
   * PSK: a single PAIRED one is unambiguous; several PAIRED ones are refused, since each has its own allowlist.
   */
  function provenRecord(ctx: RequestContext, h: Headers, ts: number, records: readonly MeshPeer[]): MeshPeer {
    const outcomes = records.map((peer) => ({ peer, outcome: proves(ctx, h, ts, peer) }));
    const proven = outcomes.filter((o) => o.outcome === 'ok').map((o) => o.peer);
    if (proven.length === 0) throw invalid(outcomes.length === 1 ? (outcomes[0]?.outcome as string) : 'hmac_mismatch');
    const paired = proven.filter((peer) => peer.status === 'PAIRED');
    if (paired.length > 1) throw invalid('federation_ambiguous');
    return paired[0] ?? (proven[0] as MeshPeer);
  }

  /** The route the envelope carries: well-formed UUIDs ending at the source cluster. */
  function envelopeRoute(h: Headers, source: string): string[] {
    if (!UUID.test(source) || h[MESH.userId] === undefined || h[MESH.userRoles] === undefined)
      throw invalid('envelope_incomplete');
    const route = parseRoute(h[MESH.route] ?? '');
    if (route.length === 0 || route.at(-1) !== source || !route.every((id) => UUID.test(id)))
      throw invalid('route_malformed');
    return route;
  }

  /** The signing time, if it lies within the accepted window. */
  function freshTs(h: Headers, nowSeconds: number): number {
    const ts = parseTs(h[MESH.ts]);
    const fresh = checkTimestamp(ts, nowSeconds, window);
    if (!fresh.ok)
      throw fresh.reason === 'invalid_signature' ? invalid('timestamp_malformed') : MeshErrors.make[fresh.reason]();
    return ts;
  }

  /** The checks a proven record's negotiated hardening adds: an empty body's digest, a nonce never seen before. */
  function checkHardening(ctx: RequestContext, h: Headers, peer: MeshPeer, ts: number, nowSeconds: number): void {
    const hardened = new Set(peer.features);
    if (hardened.has('body-sha256') && !hasBody(ctx.req) && h[MESH.bodySha256] !== EMPTY_SHA256)
      throw MeshErrors.make.body_digest_mismatch();
    const nonce = h[MESH.nonce];
    if (hardened.has('nonce') && nonce && !replay.accept(peer.id, nonce, ts + window.maxAge, nowSeconds))
      throw MeshErrors.make.signature_replayed();
  }

  /** Envelope, window and HMAC; returns the record the signature proves. */
  function verifyEnvelope(ctx: RequestContext, h: Headers, nowSeconds: number, proven: { peer: string }): MeshPeer {
    const source = (h[MESH.sourceClusterId] ?? '').toLowerCase();
    const route = envelopeRoute(h, source);
    const records = candidates(h, source);
    const ts = freshTs(h, nowSeconds);
    const peer = provenRecord(ctx, h, ts, records);
    proven.peer = peer.id;
    if (peer.status !== 'PAIRED') throw MeshErrors.make.federation_not_active({ status: peer.status });
    if (route.length > MAX_HOPS || route.includes(deps.directory.localClusterId().toLowerCase())) {
      throw MeshErrors.make.mesh_hop_limit_exceeded({ hops: route.length, max_hops: MAX_HOPS });
    }
    checkHardening(ctx, h, peer, ts, nowSeconds);
    return peer;
  }

  return {
    name: 'meshVerify',
    // Synchronous for a request that is not signed (every request but the mesh's): the runner stays synchronous.
    run(ctx: RequestContext): StageResult | Promise<StageResult> {
      // Node's headers object has the name whenever the raw headers hold it at least once (its duplicates are for
      // readEnvelopeHeaders to refuse); a scan of the raw headers would cost every request.
      if (ctx.req.headers[MESH.signature] === undefined) return 'continue';
      return verifySigned(ctx);
    },
  };

  async function verifySigned(ctx: RequestContext): Promise<StageResult> {
    const raw = ctx.req.rawHeaders;
    if (rawValues(raw, MESH.signature).length === 0) return 'continue';
    const h = readEnvelopeHeaders(raw);
    const proven = { peer: 'unknown' };
    let peer: MeshPeer;
    try {
      if (!h) throw invalid('duplicate_header');
      peer = verifyEnvelope(ctx, h, unixSeconds(deps.now()), proven);
    } catch (error) {
      outcomes.labels('verify', proven.peer, outcomeOf(error)).inc();
      throw error;
    }
    outcomes.labels('verify', peer.id, 'ok').inc();
    const envelope: MeshEnvelope = {
      sourceClusterId: (h[MESH.sourceClusterId] as string).toLowerCase(),
      userId: h[MESH.userId] as string,
      roles: (h[MESH.userRoles] as string).split(',').filter((r) => r.length > 0),
      userAttributes: h[MESH.userAttributes],
      peerToken: h[MESH.peerToken],
    };
    ctx.principal = await deps.directory.admit(peer, envelope);
    ctx.bearer = envelope.peerToken ?? null;
    ctx.meshPeer = {
      federationId: peer.id,
      sourceClusterId: envelope.sourceClusterId,
      route: parseRoute(h[MESH.route] as string),
      correlationId: h[MESH.correlationId] ?? null,
    };
    scrubHeaders(ctx);
    return 'continue';
  }
}

/** A record that negotiated a hardening must use it: a nonce, a well-formed body digest. */
function hardeningMissing(h: Headers, hardened: ReadonlySet<string>): boolean {
  if (hardened.has('nonce') && !h[MESH.nonce]) return true;
  return hardened.has('body-sha256') && !/^[0-9a-f]{64}$/.test(h[MESH.bodySha256] ?? '');
}

/** The one canonical form (canonical.ts) of this request under the record's negotiated hardening. */
function canonicalOf(ctx: RequestContext, h: Headers, ts: number, hardened: ReadonlySet<string>): string {
  return canonicalizeRequest({
    sourceClusterId: h[MESH.sourceClusterId] ?? '',
    userId: h[MESH.userId] ?? '',
    roles: h[MESH.userRoles] ?? '',
    route: h[MESH.route] ?? '',
    method: ctx.method,
    uri: ctx.rawPath,
    ts,
    peerToken: h[MESH.peerToken],
    userAttributes: h[MESH.userAttributes],
    bodySha256: hardened.has('body-sha256') ? h[MESH.bodySha256] : undefined,
    nonce: hardened.has('nonce') ? h[MESH.nonce] : undefined,
    federationId: hardened.has('federation-id') ? h[MESH.federationId] : undefined,
  });
}

/**
 * The handler and any upstream it proxies to see the receiver's view only:
 * X-User-Attributes from the admitted principal, and no
 * peer credential or envelope beyond the correlation id.
 */
function scrubHeaders(ctx: RequestContext): void {
  const headers = ctx.req.headers;
  for (const name of Object.keys(headers)) {
    if ((name.startsWith('x-kz-mesh-') && name !== MESH.correlationId) || name.startsWith('x-user-'))
      delete headers[name];
  }
  headers['x-user-attributes'] = JSON.stringify(ctx.principal?.attributes ?? {});
}
