/**
 * Reasons of the federation domain. Peer
 * transport and trust failures on the calling side use the diagnose layer
 * reasons so a failed pair, ping or disconnect names the same cause
 * diagnose would. The envelope reasons (invalid_signature, ...) live with the
 * envelope in gateway/mesh/errors.ts, shared with mesh ingress.
 */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const FederationErrors = defineErrors('federation', {
  federation_not_found: { status: 404, doc: 'No federation record with that id.' },
  untrusted_federation_disabled: {
    status: 400,
    doc:
      'A `peer_kc` federation (no `shared_issuer_url`) was requested while ' +
      'PLATFORM_ALLOW_UNTRUSTED_FEDERATION is off.',
  },
  identity_mode_unsupported: {
    status: 400,
    doc: '`identity_mode` asks for a mode this release does not support (`receiver_realm`).',
  },
  federation_field_immutable: {
    status: 400,
    doc:
      'PUT tried to change a field other than brokering_enabled, ' +
      'shared_ca_pem, require_peer_jwt; `fields` names them and nothing was ' +
      'applied.',
  },
  federation_already_paired: { status: 409, doc: 'Pair was called on a record that is already PAIRED.' },
  federation_state_conflict: {
    status: 409,
    doc: 'The operation does not apply to the record in its current `status`/`role` (both returned).',
  },
  federation_not_paired: { status: 409, doc: 'Ping needs a PAIRED record; `status` says what it is.' },
  psk_ambiguous: {
    status: 409,
    doc:
      'More than one WAITING receiver record verifies the handshake: the PSK ' +
      'is not unique. Delete one and re-pair with a fresh PSK.',
  },
  federation_declared_exists: {
    status: 409,
    doc:
      'A declared peer already has a live record (WAITING, PAIRING or PAIRED; `declared_as` names the peer): two ' +
      'applies of a declared set ran at once and the other one made it. Nothing was created; apply again.',
  },
  pairing_key_id_required: {
    status: 403,
    doc:
      'Receiver side of /remote/pair: the call names no PSK key id (X-KZ-Mesh-Key-Id) while more WAITING records ' +
      'exist than a call without one may try. Remedy: pair from a meshgate that sends the key id.',
  },
  peer_identity_aliases_local: {
    status: 409,
    doc: 'The peer reports this cluster’s own id (a self-pair, or the address points back here). Fix remote_ips.',
  },
  pairing_clock_skew: {
    status: 403,
    doc: 'Receiver side of /remote/pair: the clocks differ by 60 s or more; `skew_seconds` says by how much.',
  },
  federation_user_exists: {
    status: 409,
    doc: 'The allowlist already has an entry for that external_id (release 1.3.3 semantics).',
  },
  federation_user_not_found: { status: 404, doc: 'No allowlist entry with that external_id on this federation.' },
  dns_unresolvable: {
    status: 502,
    doc: 'The peer address is a DNS name that does not resolve. Remedy: fix the name or use an IP in remote_ips[].ip.',
  },
  connection_failed: {
    status: 502,
    doc: 'TCP connection to the peer refused or reset. Remedy: check the address, port and that the peer gateway runs.',
  },
  connection_timeout: {
    status: 504,
    doc: 'The peer did not connect or answer in time. Remedy: check routing/firewall between the clusters.',
  },
  tls_untrusted_ca: {
    status: 502,
    doc:
      'The peer certificate does not chain to the CA stored at pairing (the ' +
      'peer rotated its CA). Remedy: delete and re-pair.',
  },
  tls_hostname_mismatch: {
    status: 502,
    doc: 'The peer certificate does not name remote_ips[].hostname. Remedy: set hostname to a name in its certificate.',
  },
  tls_handshake_failed: {
    status: 502,
    doc: 'The TLS handshake with the peer failed for another reason (`detail` has the code).',
  },
  peer_unreachable: {
    status: 502,
    doc: 'The peer could not be reached for a reason outside DNS, TCP and TLS (`detail` has it).',
  },
  hmac_signature_invalid: {
    status: 502,
    doc:
      'The peer refused our signature, or its answer was not signed with the ' +
      'PSK. Remedy: disconnect and re-pair with a new PSK.',
  },
  clock_skew: {
    status: 502,
    doc:
      'The peer refused our timestamp, or its clock differs too much (60 s ' +
      'at pairing). Remedy: synchronize clocks (NTP).',
  },
  peer_identity_mismatch: {
    status: 502,
    doc: 'The peer answered with a cluster id other than the remote_cluster_id stored at pairing. Remedy: re-pair.',
  },
  peer_refused: {
    status: 502,
    doc:
      'The peer refused the signed call for another reason (e.g. ' +
      'federation_not_active); `peer_status` and `peer_reason` say which.',
  },
  peer_pairing_ended: {
    status: 409,
    doc:
      'The peer answered, signed with the PSK, that its record of this pairing is no longer PAIRED (disconnected ' +
      'on its side); this record is now DISCONNECTED too (status_reason peer_not_paired). Remedy: re-pair.',
  },
  peer_response_invalid: {
    status: 502,
    doc: 'The peer answered a peer-protocol call with a body that is not the expected shape.',
  },
  peer_disconnect_failed: {
    status: 502,
    doc:
      'Disconnect could not get the peer to acknowledge (`cause` names the ' +
      'layer reason); nothing changed. Retry with ?force=true to disconnect ' +
      'locally.',
  },
});

export type FederationReason = keyof typeof FederationErrors.defs;
