/**
 * Mesh hardening negotiated at pairing: each side offers
 * what it supports, both store the intersection. A peer that offers
 * nothing (another implementation of the spec) keeps the spec envelope;
 * two meshgates add a signed nonce (replay cache), a signed body digest and
 * the signed federation id (which of several records between the same two
 * clusters a request belongs to).
 */
import type { MeshFeature } from './directory.ts';

export const MESH_FEATURES: readonly MeshFeature[] = ['nonce', 'body-sha256', 'federation-id'];

type Offer = readonly string[];

/**
 * The intersection of both offers. `federation-id` also needs the peer's
 * record id from the handshake: without it there is nothing to name.
 */
export function negotiateFeatures(offered: Offer, own: Offer, peerRecordId: string | null): MeshFeature[] {
  const usable = (f: MeshFeature) => f !== 'federation-id' || peerRecordId !== null;
  return MESH_FEATURES.filter((f) => own.includes(f) && offered.includes(f) && usable(f));
}
