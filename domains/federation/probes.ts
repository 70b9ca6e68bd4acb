/**
 * One probe per network layer for preflight, diagnose and resolve-address:
 * DNS → TCP → TLS → HTTP, each answering ok or one stable
 * reason. They never return the peer's response body.
 */
import { X509Certificate } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP, connect as netConnect } from 'node:net';
import { checkServerIdentity, type PeerCertificate, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { request } from 'undici';
import type { PeerAgent } from '../../gateway/mesh/peer-agent.ts';
import { classifyTransportError } from '../../gateway/mesh/transport-errors.ts';

export type Probe = { ok: true; detail: string | null } | { ok: false; reason: string; detail: string | null };

const fail = (reason: string, detail: string | null = null): Probe => ({ ok: false, reason, detail });

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((resolve) => (timer = setTimeout(() => resolve(onTimeout()), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** A literal address passes as is; a name must resolve. */
export async function probeDns(host: string, timeoutMs: number): Promise<{ probe: Probe; address: string | null }> {
  if (isIP(host)) return { probe: { ok: true, detail: 'literal address' }, address: host };
  const result = await withTimeout(
    lookup(host).then(
      (r) => ({ probe: { ok: true, detail: r.address } as Probe, address: r.address as string | null }),
      (e: NodeJS.ErrnoException) => ({ probe: fail('dns_unresolvable', e.code ?? null), address: null }),
    ),
    timeoutMs,
    () => ({ probe: fail('dns_unresolvable', 'lookup timed out'), address: null }),
  );
  return result;
}

export function probeTcp(address: string, port: number, timeoutMs: number): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: address, port });
    const done = (probe: Probe) => {
      socket.destroy();
      resolve(probe);
    };
    socket.setTimeout(timeoutMs, () => done(fail('connection_timeout', `no connection within ${timeoutMs} ms`)));
    socket.once('connect', () => done({ ok: true, detail: null }));
    socket.on('error', (error) =>
      done(fail(classifyTransportError(error).reason, (error as NodeJS.ErrnoException).code ?? null)),
    );
  });
}

export interface TlsFacts {
  probe: Probe;
  /** DNS names in the presented leaf (resolve-address). */
  dnsNames: string[];
}

/**
 * With the stored peer CA: full validation (tls_untrusted_ca when the peer
 * rotated). Without one (preflight, before the CA exchange): the chain is
 * not verifiable yet, so only the hostname is checked, as the pairing
 * bootstrap does. Either way a leaf issued by our own CA means the route
 * loops back to this cluster.
 */
export function probeTls(
  target: { address: string; port: number; servername: string },
  trust: { peerCaPem: string | null; localCaPem: string },
  timeoutMs: number,
): Promise<TlsFacts> {
  return new Promise((resolve) => {
    const verifying = trust.peerCaPem !== null;
    const socket: TLSSocket = tlsConnect({
      host: target.address,
      port: target.port,
      ...(isIP(target.servername) ? {} : { servername: target.servername }),
      ...(verifying ? { ca: trust.peerCaPem as string } : { rejectUnauthorized: false }),
      ALPNProtocols: ['http/1.1'],
    });
    const done = (facts: TlsFacts) => {
      socket.destroy();
      resolve(facts);
    };
    socket.setTimeout(timeoutMs, () =>
      done({ probe: fail('connection_timeout', 'TLS handshake timed out'), dnsNames: [] }),
    );
    socket.on('error', (error) => {
      const failure = classifyTransportError(error);
      done({ probe: fail(failure.reason, failure.detail), dnsNames: [] });
    });
    socket.once('secureConnect', () => done(inspectLeaf(socket, target.servername, trust.localCaPem, verifying)));
  });
}

function inspectLeaf(socket: TLSSocket, servername: string, localCaPem: string, verified: boolean): TlsFacts {
  const cert: PeerCertificate = socket.getPeerCertificate();
  const leaf = socket.getPeerX509Certificate();
  const dnsNames = (cert.subjectaltname ?? '')
    .split(', ')
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4));
  if (leaf && issuedBy(leaf, localCaPem))
    return {
      probe: fail('peer_identity_aliases_local', 'the certificate is issued by this cluster’s own CA'),
      dnsNames,
    };
  const mismatch = checkServerIdentity(servername, cert);
  if (mismatch) return { probe: fail('tls_hostname_mismatch', mismatch.message), dnsNames };
  return {
    probe: {
      ok: true,
      detail: verified
        ? 'chain verified against the peer CA stored at pairing'
        : 'hostname verified; chain verified at pairing (peer CA not yet exchanged)',
    },
    dnsNames,
  };
}

function issuedBy(leaf: X509Certificate, caPem: string): boolean {
  const ca = new X509Certificate(caPem);
  return leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
}

/** The peer answers its public API (GET /api/ping) over the same agent pairing and ping use. */
export async function probeHttp(agent: PeerAgent): Promise<Probe> {
  try {
    const res = await request(`${agent.origin}/api/ping`, { method: 'GET', dispatcher: agent.agent });
    await res.body.dump();
    return res.statusCode === 200
      ? { ok: true, detail: 'GET /api/ping answered 200' }
      : fail('http_unexpected_status', `GET /api/ping answered ${res.statusCode}`);
  } catch (error) {
    const failure = classifyTransportError(error);
    return fail(failure.reason, failure.detail);
  }
}
