/**
 * Preflight, diagnose and resolve-address: probe a proposed or stored route layer by layer (dns,
 * tcp, tls, http, hmac) and report one stable reason per failing layer
 * with its remedy. A failed layer is part of the report
 * (200); the layers after it are `skipped`.
 */
import { ApiError } from '../../gateway/errors/api-error.ts';
import { SIGNATURE_MAX_AGE_SECONDS } from '../../gateway/mesh/canonical.ts';
import { createPeerAgent, type PeerAgent, parsePeerAddress, peerServerName } from '../../gateway/mesh/peer-agent.ts';
import { type FederationContext, pskOf, requireRecord } from './context.ts';
import { expectAccepted, expectPeerIdentity } from './pairing.ts';
import { callPeer } from './peer-client.ts';
import { type Probe, probeDns, probeHttp, probeTcp, probeTls } from './probes.ts';
import type { RemoteIp } from './schema.ts';
import type { FederationRow } from './store.ts';
import { primaryRoute } from './wire.ts';

export const LAYERS = ['dns', 'tcp', 'tls', 'http', 'hmac'] as const;
type Layer = (typeof LAYERS)[number];

/** Remedies. */
export const REMEDIES: Readonly<Record<string, string>> = {
  dns_unresolvable: 'Fix the DNS name, or put the peer IP in remote_ips[].ip and keep its name in hostname.',
  connection_failed:
    'Check the address and port, that the peer gateway is running, and firewalls between the clusters.',
  connection_timeout: 'Check routing and firewalls between the clusters; the peer did not answer in time.',
  tls_untrusted_ca:
    'The peer no longer presents a certificate from the CA exchanged at ' +
    'pairing (absent peer trust): delete and re-pair.',
  tls_hostname_mismatch: 'Set remote_ips[].hostname to a name in the peer certificate.',
  tls_handshake_failed: "Check that the address is the peer gateway's HTTPS listener.",
  peer_unreachable: 'Check the address and that the peer gateway is running.',
  peer_identity_aliases_local: 'The route reaches this cluster itself: point remote_ips at the peer.',
  http_unexpected_status: 'The address speaks HTTPS but not the platform API: check the port.',
  hmac_signature_invalid: 'HMAC or PSK failure: disconnect and re-pair both records with a new PSK.',
  clock_skew: 'Synchronize the clocks of both clusters (NTP): pairing needs under 60 s, signed calls under 300 s.',
  peer_identity_mismatch: 'The peer is not the cluster paired with this record: delete and re-pair.',
  federation_not_active: 'The peer no longer has this federation PAIRED: delete and re-pair.',
};

interface LayerReport {
  layer: Layer;
  ok: boolean;
  reason: string | null;
  detail: string | null;
  elapsed_ms: number;
  remedy: string | null;
}

export interface RouteReport {
  federation_id: string | null;
  target: { ip: string; hostname: string; port: number };
  ok: boolean;
  layers: LayerReport[];
  reason: string | null;
  remedy: string | null;
}

interface ProbeTarget {
  route: RemoteIp;
  federationId: string | null;
  peerCaPem: string | null;
  /** Only a paired record can run the signed layer. */
  hmac: (() => Promise<Probe>) | null;
}

export async function probeRoute(ctx: FederationContext, target: ProbeTarget): Promise<RouteReport> {
  const timeout = ctx.policy.peerTimeoutMs;
  const { host, port } = parsePeerAddress(target.route.ip);
  const servername = peerServerName(target.route);
  const layers: LayerReport[] = [];
  let address: string | null = null;
  const steps: [Layer, () => Promise<Probe>][] = [
    [
      'dns',
      async () => {
        const r = await probeDns(host, timeout);
        address = r.address;
        return r.probe;
      },
    ],
    ['tcp', () => probeTcp(address as string, port, timeout)],
    [
      'tls',
      async () =>
        (
          await probeTls(
            { address: address as string, port, servername },
            { peerCaPem: target.peerCaPem, localCaPem: ctx.local.caPem() },
            timeout,
          )
        ).probe,
    ],
    ['http', () => withAgent(ctx, target, probeHttp)],
    [
      'hmac',
      target.hmac ??
        (async () => ({
          ok: false,
          reason: 'skipped',
          detail: 'no PAIRED record: the signed layer runs after pairing',
        })),
    ],
  ];
  let failed: LayerReport | null = null;
  for (const [layer, run] of steps) {
    if (failed) {
      layers.push({ layer, ok: false, reason: 'skipped', detail: null, elapsed_ms: 0, remedy: null });
      continue;
    }
    const started = performance.now();
    const probe = await run();
    const report = toLayer(layer, probe, Math.round(performance.now() - started));
    layers.push(report);
    if (!report.ok && report.reason !== 'skipped') failed = report;
  }
  return {
    federation_id: target.federationId,
    target: { ip: target.route.ip, hostname: servername, port },
    ok: failed === null,
    layers,
    reason: failed?.reason ?? null,
    remedy: failed?.remedy ?? null,
  };
}

function toLayer(layer: Layer, probe: Probe, elapsed: number): LayerReport {
  if (probe.ok) return { layer, ok: true, reason: null, detail: probe.detail, elapsed_ms: elapsed, remedy: null };
  return {
    layer,
    ok: false,
    reason: probe.reason,
    detail: probe.detail,
    elapsed_ms: elapsed,
    remedy: REMEDIES[probe.reason] ?? null,
  };
}

async function withAgent(
  ctx: FederationContext,
  target: ProbeTarget,
  run: (agent: PeerAgent) => Promise<Probe>,
): Promise<Probe> {
  const trust = target.peerCaPem ? { caPem: target.peerCaPem } : ({ bootstrap: true } as const);
  const agent = createPeerAgent(target.route, trust, ctx.agents.options());
  try {
    return await run(agent);
  } finally {
    await agent.close().catch(() => {});
  }
}

/** POST /preflight: every proposed route, before anything is stored. */
export async function preflight(ctx: FederationContext, routes: RemoteIp[]) {
  const reports: RouteReport[] = [];
  for (const route of routes)
    reports.push(await probeRoute(ctx, { route, federationId: null, peerCaPem: null, hmac: null }));
  const first = reports[
    Math.max(
      0,
      routes.findIndex((r) => r.primary),
    )
  ] as RouteReport;
  return { ...first, ok: reports.every((r) => r.ok), routes: reports };
}

/** POST /{id}/diagnose: the stored route the way pair and ping connect, plus the signed layer when PAIRED. */
export async function diagnose(ctx: FederationContext, id: string): Promise<RouteReport> {
  const row = requireRecord(ctx, id);
  const route = primaryRoute(row);
  if (!route) {
    return {
      federation_id: id,
      target: { ip: '', hostname: '', port: 0 },
      ok: false,
      layers: [],
      reason: 'no_route',
      remedy: 'The record has no remote_ips yet (a receiver learns them at pairing).',
    };
  }
  const signed = row.status === 'PAIRED' && row.remoteCaPem ? () => signedProbe(ctx, row) : null;
  return probeRoute(ctx, { route, federationId: id, peerCaPem: row.remoteCaPem, hmac: signed });
}

async function signedProbe(ctx: FederationContext, row: FederationRow): Promise<Probe> {
  const agent = ctx.agents.for(row);
  const key = pskOf(ctx, row);
  if (!agent || !key) return { ok: false, reason: 'skipped', detail: 'record not paired' };
  try {
    const answer = await callPeer(
      agent,
      '/api/cluster/remote/ping',
      { federation_id: row.id },
      key,
      ctx.local.id,
      ctx.now(),
    );
    expectAccepted(ctx, answer, SIGNATURE_MAX_AGE_SECONDS);
    expectPeerIdentity(ctx, row, answer);
    return { ok: true, detail: 'signed /remote/ping verified both ways' };
  } catch (error) {
    if (error instanceof ApiError) {
      const peer = error.extra.peer_reason;
      return {
        ok: false,
        reason:
          error.reason === 'peer_refused' && peer === 'federation_not_active' ? 'federation_not_active' : error.reason,
        detail: typeof error.extra.detail === 'string' ? error.extra.detail : null,
      };
    }
    throw error;
  }
}

/** POST /resolve-address: a name → its IP by DNS; an IP → a DNS name from the TLS certificate SANs. */
export async function resolveAddress(ctx: FederationContext, input: string) {
  const { host, port } = parsePeerAddress(input);
  const dns = await probeDns(host, ctx.policy.peerTimeoutMs);
  if (!dns.probe.ok) return { input, ip: null, fqdn: null, source: 'dns', error: dns.probe.reason };
  if (host !== dns.address) return { input, ip: dns.address, fqdn: host, source: 'dns', error: null };
  const tls = await probeTls(
    { address: host, port, servername: host },
    { peerCaPem: null, localCaPem: ctx.local.caPem() },
    ctx.policy.peerTimeoutMs,
  );
  const fqdn = tls.dnsNames.find((n) => !n.startsWith('*')) ?? null;
  if (fqdn) return { input, ip: host, fqdn, source: 'tls_san', error: null };
  return {
    input,
    ip: host,
    fqdn: null,
    source: 'input',
    error: tls.probe.ok ? 'no_dns_name_in_certificate' : tls.probe.reason,
  };
}
