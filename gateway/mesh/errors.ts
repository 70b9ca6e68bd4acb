/**
 * Reasons of the mesh proxy.
 * Egress (source side) and ingress (receiver side) share this table; the
 * signature reasons the peer protocol also gives live with the envelope
 * in gateway/mesh/ so both users import them from one place.
 */
import { defineErrors } from '../errors/api-error.ts';

export const MeshErrors = defineErrors('mesh', {
  mesh_target_not_found: {
    status: 404,
    doc: 'Egress: the selector matches no PAIRED federation (by id, remote cluster id, name or unique name prefix).',
  },
  mesh_target_ambiguous: {
    status: 409,
    doc: 'Egress: the selector name or prefix matches several PAIRED federations; use the federation UUID.',
  },
  mesh_target_is_local: {
    status: 400,
    doc: 'Egress: the selector names this cluster itself; call the local API directly.',
  },
  mesh_proxy_bad_gateway: {
    status: 502,
    doc:
      'Egress: the peer could not be reached (connection, TLS or upstream ' +
      'failure); `layer` and `cause` name the failing layer.',
  },
  mesh_proxy_timeout: {
    status: 504,
    doc: 'Egress: the peer did not answer within the read timeout (60 s for /api, 600 s for /runtime by default).',
  },
  mesh_hop_limit_exceeded: {
    status: 508,
    doc: 'The route trace would exceed 8 hops, or this cluster is already in it (a loop).',
  },
  tenant_required: {
    status: 401,
    doc: 'Egress with a shared-realm token that lacks a `tenant_id` claim.',
    stringDetail: 'tenant_required',
  },
  mesh_tenant_not_admitted: {
    status: 403,
    doc: 'Egress with a shared-realm token whose `tenant_id` is not `__default__`.',
    stringDetail: 'mesh_tenant_not_admitted',
  },
  invalid_signature: {
    status: 403,
    doc:
      'Peer call or mesh request: the HMAC does not verify under the PSK, or ' +
      'the envelope headers are missing, duplicated or malformed.',
  },
  signature_expired: { status: 403, doc: 'The signature timestamp is older than the accepted age (300 s by default).' },
  signature_in_future: {
    status: 403,
    doc: 'The signature timestamp is further ahead than the allowed skew (60 s by default).',
  },
  signature_replayed: {
    status: 403,
    doc: 'A signed request with this nonce (or peer-call signature) was already accepted within its window.',
  },
  body_digest_mismatch: { status: 403, doc: 'Hardened mesh: the request body does not match the signed body digest.' },
  federation_not_active: {
    status: 403,
    doc: 'The signature verified, but the federation record is not PAIRED (disconnected or deleted).',
  },
  peer_jwt_required: {
    status: 403,
    doc: 'Ingress: the federation needs the caller’s token in X-KZ-Mesh-Peer-Token and none was sent.',
  },
  peer_jwt_validation_failed: {
    status: 403,
    doc:
      'Ingress: the peer token does not validate (unknown kid, bad ' +
      'signature, wrong issuer, expired, disallowed algorithm); `error` says ' +
      'why.',
  },
  peer_jwks: {
    status: 403,
    doc: 'Ingress: the JWKS of the realm that must validate the peer token could not be fetched.',
  },
  shared_idp_issuer_untrusted: {
    status: 403,
    doc: 'Ingress: the federation’s shared issuer is not in PLATFORM_TRUSTED_SHARED_ISSUERS on this cluster.',
  },
  brokering_required_for_receiver_controlled: {
    status: 403,
    doc:
      'Ingress: brokering is disabled on a receiver-controlled ' +
      '(`shared_idp`) federation, so no brokered user can be admitted.',
  },
  unauthorized_brokered_user: {
    status: 403,
    doc: 'Ingress: the caller’s external id is not on the federation’s allowlist.',
  },
  revoked_brokered_user: {
    status: 403,
    doc:
      'Ingress: the caller’s allowlist entry was revoked, or its local ' +
      'brokered user is disabled (PUT /api/auth/users/{id}, `meshgate user ' +
      'disable`).',
  },
});

export type MeshReason = keyof typeof MeshErrors.defs;

/**
 * What meshVerify may refuse a signed request with, on any route that takes an identity (the API document lists them).
 */
export const MESH_INGRESS_REASONS: readonly MeshReason[] = [
  'invalid_signature',
  'signature_expired',
  'signature_in_future',
  'signature_replayed',
  'body_digest_mismatch',
  'federation_not_active',
  'mesh_hop_limit_exceeded',
  'peer_jwt_required',
  'peer_jwt_validation_failed',
  'peer_jwks',
  'shared_idp_issuer_untrusted',
  'brokering_required_for_receiver_controlled',
  'unauthorized_brokered_user',
  'revoked_brokered_user',
];

/** What a trusted shared-realm token may be refused with on the routes that accept one. */
export const SHARED_REALM_REASONS: readonly MeshReason[] = ['tenant_required', 'mesh_tenant_not_admitted'];
