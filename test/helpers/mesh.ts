/**
 * Mesh test setups over real parts: meshgates paired through the real
 * federation API (test/helpers/federation.ts), the real oidc-provider as
 * the shared realm (test/helpers/peers/oidc.ts), allowlist entries through
 * the receiver's API, and a signer that speaks the envelope exactly as a
 * source meshgate does (gateway/mesh/sign.ts) for requests crafted by tests.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pskKey } from '../../gateway/mesh/canonical.ts';
import type { MeshFeature } from '../../gateway/mesh/directory.ts';
import { MESH } from '../../gateway/mesh/headers.ts';
import { signHeaders } from '../../gateway/mesh/sign.ts';
import { type GatewayClient, getRecord, newPsk, post, routeTo, startPeer } from './federation.ts';
import type { After, TestGateway } from './gateway.ts';
import { type OidcPeer, type Persona, startOidcProvider } from './peers/oidc.ts';

export interface MeshPair<Source extends GatewayClient = TestGateway, Receiver extends GatewayClient = TestGateway> {
  source: Source;
  receiver: Receiver;
  /** The initiator's record id on the source (the selector automation uses). */
  sourceFedId: string;
  receiverFedId: string;
  sourceClusterId: string;
  receiverClusterId: string;
  psk: string;
  features: MeshFeature[];
}

/** Pairs `source` (initiator) with `receiver`, in shared_idp when `oidc` is given, else peer_kc. */
export async function pairForMesh<Source extends GatewayClient, Receiver extends GatewayClient>(
  source: Source,
  receiver: Receiver,
  oidc: OidcPeer | null,
  label = 'receiver-label',
): Promise<MeshPair<Source, Receiver>> {
  const psk = newPsk();
  const shared = oidc ? { shared_issuer_url: oidc.issuer, shared_ca_pem: oidc.caPem } : { shared_issuer_url: null };
  const r = await create(receiver, {
    remote_cluster_name: 'initiator-label',
    role: 'receiver',
    preshared_key: psk,
    ...shared,
  });
  const i = await create(source, {
    remote_cluster_name: label,
    role: 'initiator',
    remote_ips: [routeTo(receiver)],
    preshared_key: psk,
    ...shared,
  });
  const paired = await post(source, `/${i.id}/pair`);
  assert.equal(paired.status, 200, paired.text);
  const receiverRecord = await getRecord(receiver, r.id);
  return {
    source,
    receiver,
    sourceFedId: i.id,
    receiverFedId: r.id,
    sourceClusterId: receiverRecord.remote_cluster_id,
    receiverClusterId: paired.json.remote_cluster_id,
    psk,
    features: receiverRecord.mesh_features,
  };
}

/** The same pairing seen from the receiver: it becomes the source of the reverse direction. */
export function reversed<Source extends GatewayClient, Receiver extends GatewayClient>(
  pair: MeshPair<Source, Receiver>,
): MeshPair<Receiver, Source> {
  return {
    ...pair,
    source: pair.receiver,
    receiver: pair.source,
    sourceFedId: pair.receiverFedId,
    receiverFedId: pair.sourceFedId,
    sourceClusterId: pair.receiverClusterId,
    receiverClusterId: pair.sourceClusterId,
  };
}

async function create(gw: GatewayClient, body: Record<string, unknown>) {
  const res = await gw.request('POST', '/api/cluster/federations', { token: await gw.adminToken(), json: body });
  assert.equal(res.status, 200, res.text);
  return res.json;
}

/** Adds `<sub>@<source cluster>` to the receiver's allowlist with a tuple recipe; returns the external id. */
export async function allow(
  pair: MeshPair<GatewayClient, GatewayClient>,
  sub: string,
  initialTuples: unknown[] = [],
): Promise<string> {
  const externalId = `${sub}@${pair.sourceClusterId}`;
  const res = await post(pair.receiver, `/${pair.receiverFedId}/users`, {
    external_id: externalId,
    initial_tuples: initialTuples,
  });
  assert.equal(res.status, 201, res.text);
  return externalId;
}

export const PERSONAS: Persona[] = [
  { username: 'fed-clr-u', password: 'pw-u', claims: { clearance: 'U', country: 'GBR' } },
  { username: 'fed-clr-s', password: 'pw-s', claims: { clearance: 'S' } },
  { username: 'fed-stranger', password: 'pw-x', claims: { clearance: 'TS' } },
  { username: 'fed-no-tenant', password: 'pw-n', claims: { tenant_id: null } },
  { username: 'fed-other-tenant', password: 'pw-o', claims: { tenant_id: 'acme' } },
];

/** The shared realm plus two meshgates that trust it, paired in shared_idp. */
export async function sharedIdpMesh(
  t: After,
  overrides: { source?: object; receiver?: object; personas?: Persona[] } = {},
) {
  const oidc = await startOidcProvider(t, { personas: overrides.personas ?? PERSONAS });
  const trust = { federation: { peerTimeoutMs: 3000, trustedSharedIssuers: [oidc.issuer] } };
  const source = await startPeer(t, 'mesh-a', { ...trust, ...overrides.source });
  const receiver = await startPeer(t, 'mesh-b', { ...trust, ...overrides.receiver });
  const pair = await pairForMesh(source, receiver, oidc);
  return { oidc, pair, source, receiver };
}

export interface CraftedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
}

export interface EnvelopeInput {
  userId: string;
  roles?: string;
  route?: string;
  peerToken?: string;
  userAttributes?: string;
  /** Seconds added to the current time for the signature timestamp. */
  tsOffset?: number;
  psk?: string;
  body?: Buffer;
  nonce?: string;
  /** X-KZ-Mesh-Federation-Id when the pair negotiated it: the receiver's record by default, null leaves it out. */
  federationId?: string | null;
}

/** A request signed exactly as a source meshgate signs it (same canonical form, same hardening). */
export function craft(
  pair: MeshPair<GatewayClient, GatewayClient>,
  method: string,
  path: string,
  input: EnvelopeInput,
): CraftedRequest {
  const headers: Record<string, string> = {
    [MESH.sourceClusterId]: pair.sourceClusterId,
    [MESH.userId]: input.userId,
    [MESH.userRoles]: input.roles ?? '',
    [MESH.route]: input.route ?? pair.sourceClusterId,
    [MESH.correlationId]: randomUUID(),
  };
  if (input.peerToken) headers[MESH.peerToken] = input.peerToken;
  if (input.userAttributes) headers[MESH.userAttributes] = input.userAttributes;
  const federationId = input.federationId === undefined ? pair.receiverFedId : input.federationId;
  if (pair.features.includes('federation-id') && federationId !== null) headers[MESH.federationId] = federationId;
  const signed = signHeaders(headers, method, path, input.body, {
    key: pskKey(input.psk ?? pair.psk),
    features: new Set(pair.features),
    nowSeconds: () => Math.floor(Date.now() / 1000) + (input.tsOffset ?? 0),
    ...(input.nonce ? { nonce: () => input.nonce as string } : {}),
  });
  return { method, path, headers: signed };
}
