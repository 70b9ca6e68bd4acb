/**
 * `/api/cluster/remote/{pair,ping,disconnect}`: no user
 * credential at the route level — the PSK signature over the headers and
 * the raw body is the only authentication, checked in peer-protocol.ts.
 */
import { readBody } from '../../gateway/http/body.ts';
import type { RequestContext } from '../../gateway/http/context.ts';
import { parseTs } from '../../gateway/mesh/canonical.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { jsonObject } from '../../gateway/openapi/route-docs.ts';
import type { FederationContext } from './context.ts';
import { MESH_HEADERS } from './peer-client.ts';
import { type PeerReply, remoteDisconnect, remotePair, remotePing, type SignedCall } from './peer-protocol.ts';
import { KEY_ID_HEADER } from './psk-key-id.ts';

/** Peer bodies are small JSON documents; a CA PEM is the largest part. */
const MAX_PEER_BODY = 256 * 1024;

async function signedCall(ctx: RequestContext): Promise<SignedCall> {
  const header = (name: string) => {
    const value = ctx.req.headers[name];
    return typeof value === 'string' ? value : '';
  };
  const rawBody = await readBody(ctx.req, MAX_PEER_BODY);
  const call = {
    sourceClusterId: header(MESH_HEADERS.sourceClusterId),
    keyId: header(KEY_ID_HEADER),
    route: header(MESH_HEADERS.route),
    signature: header(MESH_HEADERS.signature),
    ts: parseTs(ctx.req.headers[MESH_HEADERS.ts]),
    path: ctx.rawPath,
    rawBody,
  };
  if (!call.sourceClusterId || !call.signature || Number.isNaN(call.ts)) throw MeshErrors.make.invalid_signature();
  return call;
}

type PeerAnswer = (fctx: FederationContext, call: SignedCall) => PeerReply;

/** Every peer call: the envelope (signature, age, replay) is checked before the body is read as JSON. */
const SIGNED_CALL_REASONS = [
  'invalid_signature',
  'signature_expired',
  'signature_in_future',
  'signature_replayed',
  'body_too_large',
];

function peerRoute(
  path: string,
  answer: PeerAnswer,
  fctx: FederationContext,
  summary: string,
  errors: string[] = [],
): RouteDef {
  return {
    method: 'POST',
    path,
    auth: 'none',
    doc: { summary, answers: { 200: jsonObject }, errors: [...SIGNED_CALL_REASONS, ...errors] },
    handle: async (ctx) => answer(fctx, await signedCall(ctx)),
  };
}

export function peerRoutes(fctx: FederationContext): RouteDef[] {
  return [
    peerRoute('/cluster/remote/pair', remotePair, fctx, 'Peer protocol: pair (PSK-signed; answered signed)', [
      'pairing_clock_skew',
      'peer_identity_aliases_local',
      'psk_ambiguous',
      'pairing_key_id_required',
      'request_validation_failed',
    ]),
    peerRoute('/cluster/remote/ping', remotePing, fctx, 'Peer protocol: ping (PSK-signed; answered signed)', [
      'federation_not_active',
    ]),
    peerRoute(
      '/cluster/remote/disconnect',
      remoteDisconnect,
      fctx,
      'Peer protocol: disconnect (PSK-signed; answered signed)',
      ['request_validation_failed'],
    ),
  ];
}
