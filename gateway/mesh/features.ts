/**
 * Mesh hardening negotiated at pairing (issue 6 item 4): each side offers
 * what it supports, both store the intersection. A peer that offers
 * nothing (another implementation of the spec) keeps the spec envelope;
 * two meshgates add a signed nonce (replay cache) and a signed body digest.
 */
import type { MeshFeature } from './directory.ts';

export const MESH_FEATURES: readonly MeshFeature[] = ['nonce', 'body-sha256'];

export function negotiateFeatures(offered: readonly string[], own: readonly string[]): MeshFeature[] {
  return MESH_FEATURES.filter((f) => own.includes(f) && offered.includes(f));
}
