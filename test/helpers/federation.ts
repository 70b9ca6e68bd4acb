/**
 * Federation test helpers: real gateways with their own data dir, CA,
 * cluster name and hostname (fed-a.test, ...). Peers are addressed as
 * {ip: 127.0.0.1:<port>, hostname: fed-x.test}: the socket goes to the IP,
 * Host and SNI carry the name, so no /etc/hosts entry is needed.
 */
import assert from 'node:assert/strict';
import type { ConfigInput } from '../../gateway/config/schema.ts';
import { type After, startTestGateway, type TestGateway, type TestGatewayOptions } from './gateway.ts';

/** What the pairing helpers need of a gateway: a test gateway, or a cluster reached through its load balancer. */
export type GatewayClient = Pick<TestGateway, 'port' | 'overrides' | 'request' | 'adminToken'>;

export const SHARED_ISSUER = 'https://idp.test/realms/federation';

export async function startPeer(
  t: After,
  name: string,
  overrides: ConfigInput = {},
  options: TestGatewayOptions = {},
): Promise<TestGateway> {
  return startTestGateway(
    t,
    { clusterName: name, hostnames: [`${name}.test`], federation: { peerTimeoutMs: 3000 }, ...overrides },
    options,
  );
}

export function routeTo(gw: GatewayClient, hostname = gw.overrides.hostnames?.[0] as string) {
  return { ip: `127.0.0.1:${gw.port}`, hostname, primary: true };
}

/** A fresh PSK per pair, as the SDK tests mint one (avoids psk_ambiguous). */
export function newPsk(): string {
  return `psk-${crypto.randomUUID()}`;
}

export async function createRecord(gw: GatewayClient, body: Record<string, unknown>) {
  const res = await gw.request('POST', '/api/cluster/federations', {
    token: await gw.adminToken(),
    json: { shared_issuer_url: SHARED_ISSUER, ...body },
  });
  assert.equal(res.status, 200, res.text);
  return res.json;
}

/** Steps 2–4 of the spec's pairing procedure; returns both record ids and the pair answer. */
export async function pairGateways(initiator: GatewayClient, receiver: GatewayClient, psk = newPsk()) {
  const r = await createRecord(receiver, {
    remote_cluster_name: 'initiator-label',
    role: 'receiver',
    preshared_key: psk,
  });
  const i = await createRecord(initiator, {
    remote_cluster_name: 'receiver-label',
    role: 'initiator',
    remote_ips: [routeTo(receiver)],
    preshared_key: psk,
  });
  const paired = await initiator.request('POST', `/api/cluster/federations/${i.id}/pair`, {
    token: await initiator.adminToken(),
  });
  assert.equal(paired.status, 200, paired.text);
  return { initiatorId: i.id as string, receiverId: r.id as string, psk, paired: paired.json };
}

export async function getRecord(gw: GatewayClient, id: string) {
  const res = await gw.request('GET', `/api/cluster/federations/${id}`, { token: await gw.adminToken() });
  assert.equal(res.status, 200, res.text);
  return res.json;
}

export async function post(gw: GatewayClient, path: string, json?: unknown, token?: string) {
  return gw.request('POST', `/api/cluster/federations${path}`, {
    token: token ?? (await gw.adminToken()),
    ...(json === undefined ? {} : { json }),
  });
}
