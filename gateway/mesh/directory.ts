/**
 * What the mesh needs from the domains, as one service key the gateway
 * reads (gateway/ knows no domain by name): the PAIRED peers for egress,
 * the record a signed request claims to come from, and admission of the
 * caller as a local brokered Principal (identity mode, allowlist,
 * provisioning). domains/mesh provides it over the federation domain.
 */
import type { KeyObject } from 'node:crypto';
import type { Authenticator, Principal } from '../principal.ts';
import { createServiceKey } from '../services.ts';
import type { PeerAgent } from './peer-agent.ts';

/** Hardening features two meshgates agree on at pairing (gateway/mesh/features.ts). */
export type MeshFeature = 'nonce' | 'body-sha256' | 'federation-id';

export interface MeshPeer {
  /** Federation record id. */
  readonly id: string;
  readonly remoteClusterId: string;
  readonly remoteClusterName: string;
  /** The peer's id for this pairing (X-KZ-Mesh-Federation-Id on egress); null for a peer that never sent one. */
  readonly remoteFederationId: string | null;
  readonly status: 'WAITING' | 'PAIRING' | 'PAIRED' | 'DISCONNECTED' | 'DELETED';
  /** Features both sides announced at pairing; empty for a peer that only speaks the spec envelope. */
  readonly features: readonly MeshFeature[];
}

/** The PAIRED peers, indexed: each selector tier is a map read, whatever the number of peers. */
export interface PairedPeers {
  /** By record id (lowercase). */
  byId(id: string): MeshPeer | undefined;
  /** By the peer's cluster id (lowercase). */
  byClusterId(clusterId: string): readonly MeshPeer[];
  byName(name: string): readonly MeshPeer[];
  /** Peers whose name starts with `prefix`: at most `limit` of them (a selector needs to know one from several). */
  byNamePrefix(prefix: string, limit: number): readonly MeshPeer[];
}

/** The signed claims of an inbound mesh request, handed to admission once the envelope verified. */
export interface MeshEnvelope {
  readonly sourceClusterId: string;
  readonly userId: string;
  readonly roles: readonly string[];
  /** Raw X-KZ-Mesh-User-Attributes (trusted only in source-trusted modes). */
  readonly userAttributes: string | undefined;
  readonly peerToken: string | undefined;
}

export interface MeshDirectory {
  localClusterId(): string;
  localClusterName(): string;
  /** PAIRED records, for selector resolution: indexed once per change of the PAIRED set, not per request. */
  paired(): PairedPeers;
  /** Every record pinned to a peer's cluster id, DELETED excluded: the candidates when a request names no record. */
  bySourceCluster(clusterId: string): readonly MeshPeer[];
  /** The record a signed X-KZ-Mesh-Federation-Id names (this cluster's own id for it), DELETED excluded. */
  byFederationId(federationId: string): MeshPeer | undefined;
  /** The PSK as a KeyObject (never serialized); null once the record is deleted. */
  key(peer: MeshPeer): KeyObject | null;
  /** The peer's undici agent (stored CA, SNI hostname); null when it has no route or CA. */
  agent(peer: MeshPeer): PeerAgent | null;
  /** Identity by mode, allowlist admission, first-request provisioning; throws the mesh reasons. */
  admit(peer: MeshPeer, envelope: MeshEnvelope): Promise<Principal>;
  /** Egress: accepts native credentials and bearer tokens of trusted shared issuers. */
  readonly egressAuthenticator: Authenticator;
}

export const MESH_DIRECTORY = createServiceKey<MeshDirectory>('mesh-directory');
