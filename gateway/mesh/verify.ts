/**
 * meshVerify: the ingress stage for a request carrying X-KZ-Mesh-Signature
 * (spec: Authentication 5–7; contract §4.4–§4.5). In order: one value per
 * envelope header, the peer record by source cluster id, the timestamp
 * window, the HMAC over the ONE canonical form (constant time), PAIRED,
 * hop limit and loop, then the negotiated hardening (nonce replay, body
 * digest). Every envelope failure is a 403 without `rebac_denied`. The
 * caller is then admitted by the directory (identity mode, allowlist,
 * provisioning) and the route runs as that local brokered principal.
 */
import type { Config } from '../config/schema.ts';
import type { RequestContext } from '../http/context.ts';
import type { Stage, StageResult } from '../pipeline/stage.ts';
import { EMPTY_SHA256, hasBody } from './body-guard.ts';
import { canonicalizeRequest, checkTimestamp, parseTs, signatureMatches, unixSeconds } from './canonical.ts';
import type { MeshDirectory, MeshEnvelope, MeshPeer } from './directory.ts';
import { MeshErrors } from './errors.ts';
import { MAX_HOPS, MESH, parseRoute, rawValues } from './headers.ts';
import { ReplayCache } from './replay.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ENVELOPE = Object.values(MESH);

type Headers = Partial<Record<(typeof MESH)[keyof typeof MESH], string>>;

/** Each envelope header at most once (a repeated one is smuggling, contract §4.3); null when not. */
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
  mesh: Config['mesh'];
  now(): Date;
}

export function createMeshVerifyStage(deps: VerifyDeps): Stage {
  const replay = new ReplayCache(deps.mesh.replayCacheSize);
  const window = { maxAge: deps.mesh.signatureTtlSeconds, maxFuture: deps.mesh.signatureFutureSkewSeconds };
  const invalid = (problem: string) => MeshErrors.make.invalid_signature({ problem });

  /** Envelope, window and HMAC; returns the record the signature proves. */
  function verifyEnvelope(ctx: RequestContext, h: Headers, nowSeconds: number): MeshPeer {
    const source = h[MESH.sourceClusterId] ?? '';
    const route = parseRoute(h[MESH.route] ?? '');
    if (!UUID.test(source) || h[MESH.userId] === undefined || h[MESH.userRoles] === undefined) throw invalid('envelope_incomplete');
    if (route.length === 0 || route.at(-1) !== source.toLowerCase() || !route.every((id) => UUID.test(id))) throw invalid('route_malformed');
    const peer = deps.directory.bySourceCluster(source);
    const key = peer ? deps.directory.key(peer) : null;
    if (!peer || !key) throw invalid('unknown_source');
    const ts = parseTs(h[MESH.ts]);
    const fresh = checkTimestamp(ts, nowSeconds, window);
    if (!fresh.ok) throw fresh.reason === 'invalid_signature' ? invalid('timestamp_malformed') : MeshErrors.make[fresh.reason]();
    const hardened = new Set(peer.features);
    if ((hardened.has('nonce') && !h[MESH.nonce]) || (hardened.has('body-sha256') && !/^[0-9a-f]{64}$/.test(h[MESH.bodySha256] ?? ''))) {
      throw invalid('hardening_missing');
    }
    const canonical = canonicalizeRequest({
      sourceClusterId: source,
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
    });
    if (!signatureMatches(key, canonical, h[MESH.signature] ?? '')) throw invalid('hmac_mismatch');
    if (peer.status !== 'PAIRED') throw MeshErrors.make.federation_not_active({ status: peer.status });
    if (route.length > MAX_HOPS || route.includes(deps.directory.localClusterId().toLowerCase())) {
      throw MeshErrors.make.mesh_hop_limit_exceeded({ hops: route.length, max_hops: MAX_HOPS });
    }
    if (hardened.has('body-sha256') && !hasBody(ctx.req) && h[MESH.bodySha256] !== EMPTY_SHA256) throw MeshErrors.make.body_digest_mismatch();
    const nonce = h[MESH.nonce];
    if (hardened.has('nonce') && nonce && !replay.accept(peer.id, nonce, ts + window.maxAge, nowSeconds)) throw MeshErrors.make.signature_replayed();
    return peer;
  }

  return {
    name: 'meshVerify',
    async run(ctx: RequestContext): Promise<StageResult> {
      const raw = ctx.req.rawHeaders;
      if (rawValues(raw, MESH.signature).length === 0) return 'continue';
      const h = readEnvelopeHeaders(raw);
      if (!h) throw invalid('duplicate_header');
      const peer = verifyEnvelope(ctx, h, unixSeconds(deps.now()));
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
    },
  };
}

/**
 * The handler and any upstream it proxies to see the receiver's view only:
 * X-User-Attributes from the admitted principal (contract §9.2), and no
 * peer credential or envelope beyond the correlation id.
 */
function scrubHeaders(ctx: RequestContext): void {
  const headers = ctx.req.headers;
  for (const name of Object.keys(headers)) {
    if ((name.startsWith('x-kz-mesh-') && name !== MESH.correlationId) || name.startsWith('x-user-')) delete headers[name];
  }
  headers['x-user-attributes'] = JSON.stringify(ctx.principal?.attributes ?? {});
}
