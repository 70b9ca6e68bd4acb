/**
 * The initiator side of pairing and the checks every peer answer passes.
 * The first /remote/pair runs over the
 * TLS bootstrap: hostname pinned, chain not yet verifiable; the receiver's
 * CA is accepted only from an answer whose response HMAC verifies under the
 * PSK, and only when the leaf the peer presented was issued by that CA.
 */
import { isIP } from 'node:net';
import { authorityOf, hostOfUrl } from '../../gateway/http/origin.ts';
import { unixSeconds } from '../../gateway/mesh/canonical.ts';
import { negotiateFeatures } from '../../gateway/mesh/features.ts';
import { createPeerAgent, parsePeerAddress, verifyLeafIssuedBy } from '../../gateway/mesh/peer-agent.ts';
import type { Principal } from '../../gateway/principal.ts';
import { type FederationContext, pskOf, requireRecord } from './context.ts';
import { FederationErrors } from './errors.ts';
import { callPeer, type PeerAnswer, peerReason } from './peer-client.ts';
import { PAIRING_MAX_SKEW_SECONDS } from './peer-protocol.ts';
import { pskKeyId } from './psk-key-id.ts';
import { pairAnswer } from './requests.ts';
import type { RemoteIp } from './schema.ts';
import type { FederationRow } from './store.ts';
import { primaryRoute, recordView } from './wire.ts';

/** POST /{id}/pair on an initiator record in PAIRING: handshake, CA exchange, both sides PAIRED. */
export async function pair(ctx: FederationContext, principal: Principal, id: string) {
  const row = requireRecord(ctx, id);
  if (row.status === 'PAIRED') throw FederationErrors.make.federation_already_paired();
  if (row.role !== 'initiator' || row.status !== 'PAIRING')
    throw FederationErrors.make.federation_state_conflict({ status: row.status, role: row.role });
  const route = primaryRoute(row);
  const key = pskOf(ctx, row);
  if (!route || !key) throw FederationErrors.make.federation_state_conflict({ status: row.status, role: row.role });
  const agent = createPeerAgent(route, { bootstrap: true }, ctx.agents.options());
  try {
    const answer = await callPeer(
      agent,
      '/api/cluster/remote/pair',
      pairBody(ctx, row, principal),
      key,
      ctx.local.id,
      ctx.now(),
      pskKeyId(key),
    );
    expectAccepted(ctx, answer, PAIRING_MAX_SKEW_SECONDS);
    const parsed = pairAnswer.safeParse(answer.json);
    if (!parsed.success || answer.responderId?.toLowerCase() !== parsed.data.cluster_id)
      throw FederationErrors.make.peer_response_invalid();
    if (parsed.data.cluster_id === ctx.local.id)
      throw FederationErrors.make.peer_identity_aliases_local({ cluster_id: parsed.data.cluster_id });
    const leaf = agent.presentedLeaf();
    if (!leaf || !verifyLeafIssuedBy(leaf, parsed.data.ca_cert)) {
      throw FederationErrors.make.tls_untrusted_ca({
        layer: 'tls',
        detail: 'the certificate presented is not issued by the CA in the signed answer',
      });
    }
    const at = ctx.now().toISOString();
    const paired = ctx.records.update(row.id, {
      remoteClusterId: parsed.data.cluster_id,
      remoteFederationId: parsed.data.federation_id ?? null,
      remoteCaPem: parsed.data.ca_cert,
      meshFeatures: negotiateFeatures(parsed.data.mesh_features, ctx.meshFeatures, parsed.data.federation_id ?? null),
      status: 'PAIRED',
      lastPing: at,
      lastActivity: at,
      updatedAt: at,
    });
    // Seeded relation: the admin who paired gets federation:{id}#operator.
    ctx.authz.write([
      {
        subject: { namespace: 'user', id: principal.userId },
        relation: 'operator',
        object: { namespace: 'federation', id: row.id },
      },
    ]);
    ctx.logger.info(
      { federation_id: row.id, remote_cluster_id: paired.remoteClusterId },
      'federation paired (initiator)',
    );
    return recordView(paired);
  } finally {
    await agent.close().catch(() => {});
  }
}

function pairBody(ctx: FederationContext, row: FederationRow, principal: Principal): Record<string, unknown> {
  return {
    local_cluster_id: ctx.local.id,
    local_cluster_name: ctx.local.name,
    // The receiver names this record in the mesh requests it sends back (X-KZ-Mesh-Federation-Id).
    local_federation_id: row.id,
    local_ips: [advertisedRoute(ctx, row)],
    admin_user_id: principal.userId,
    local_ca_cert: ctx.local.caPem(),
    peer_kc_issuer_url: row.localKc?.issuer_url ?? null,
    peer_kc_jwks_url: row.localKc?.jwks_url ?? null,
    peer_broker_client_id: row.localKc?.client_id ?? null,
    peer_broker_client_secret: row.localKc?.client_secret_urn ?? null,
    mesh_features: ctx.meshFeatures,
  };
}

/**
 * How the peer should reach this cluster: the
 * record's callback_hostname, else auto-detected from the bound address
 * and the public origin (its host as Host/SNI, its port).
 */
export function advertisedRoute(ctx: FederationContext, row: FederationRow): RemoteIp {
  if (row.callbackHostname) {
    const { host } = parsePeerAddress(row.callbackHostname);
    return { ip: row.callbackHostname, hostname: isIP(host) ? (ctx.local.hostnames[0] ?? null) : host, primary: true };
  }
  const origin = new URL(ctx.local.origin());
  const host = hostOfUrl(origin);
  const port = origin.port ? Number(origin.port) : 443;
  const wildcard = ctx.local.bind === '0.0.0.0' || ctx.local.bind === '::';
  return { ip: authorityOf(wildcard ? host : ctx.local.bind, port), hostname: host, primary: true };
}

/**
 * A peer answer is usable only when it is 200, carries a valid response
 * signature, and its clock is within `maxSkew`. Refusals map to the stable
 * diagnose reasons (pairing errors = diagnose reasons).
 */
export function expectAccepted(ctx: FederationContext, answer: PeerAnswer, maxSkew: number): void {
  if (answer.status !== 200) throw refusalError(answer);
  if (!answer.signed)
    throw FederationErrors.make.hmac_signature_invalid({
      layer: 'hmac',
      detail: 'the answer is not signed with the PSK',
    });
  const skew = answer.ts - unixSeconds(ctx.now());
  if (Math.abs(skew) >= maxSkew) throw FederationErrors.make.clock_skew({ layer: 'hmac', skew_seconds: skew });
}

function refusalError(answer: PeerAnswer) {
  const reason = peerReason(answer);
  const detail = answer.json?.detail as Record<string, unknown> | undefined;
  switch (reason) {
    case 'invalid_signature':
      return FederationErrors.make.hmac_signature_invalid({
        layer: 'hmac',
        detail: 'the peer did not verify our signature: the PSKs differ',
      });
    case 'pairing_clock_skew':
    case 'signature_expired':
    case 'signature_in_future':
      return FederationErrors.make.clock_skew({
        layer: 'hmac',
        peer_reason: reason,
        skew_seconds: detail?.skew_seconds ?? null,
      });
    case 'psk_ambiguous':
      return FederationErrors.make.psk_ambiguous({ peer: true });
    case 'peer_identity_aliases_local':
      return FederationErrors.make.peer_identity_aliases_local({ peer: true });
    default:
      return FederationErrors.make.peer_refused({ peer_status: answer.status, peer_reason: reason });
  }
}

/** Ping/diagnose/disconnect answers must come from the cluster stored at pairing. */
export function expectPeerIdentity(ctx: FederationContext, row: FederationRow, answer: PeerAnswer): void {
  const clusterId = typeof answer.json?.cluster_id === 'string' ? answer.json.cluster_id.toLowerCase() : null;
  if (clusterId === ctx.local.id) throw FederationErrors.make.peer_identity_aliases_local({ cluster_id: clusterId });
  if (!clusterId || clusterId !== row.remoteClusterId || answer.responderId?.toLowerCase() !== clusterId) {
    throw FederationErrors.make.peer_identity_mismatch({ expected: row.remoteClusterId, got: clusterId });
  }
}
