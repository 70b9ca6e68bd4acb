/**
 * One undici Agent per federation peer:
 * it connects to the record's primary `ip` (a literal address
 * or a DNS name, optionally with a port, default 443) while the request
 * origin, the Host header and TLS SNI carry the peer's `hostname`. TLS
 * trusts ONLY the peer CA stored at pairing. Redirects are never followed
 * (undici follows none unless a redirect interceptor is composed).
 */

import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { checkServerIdentity, type TLSSocket } from 'node:tls';
import { Agent, buildConnector } from 'undici';
import { urlOf } from '../http/origin.ts';

export interface PeerRoute {
  /** `10.0.0.12`, `127.0.0.1:8443`, `[::1]:8443`, `::1`, `peer.example`, `peer.example:8443`. */
  ip: string;
  /** Host header and SNI; the ip's host when empty. */
  hostname?: string | null | undefined;
}

export interface PeerAddress {
  /** What the socket connects to (brackets stripped). */
  host: string;
  port: number;
}

export class PeerAddressError extends Error {
  override name = 'PeerAddressError';
}

/** Splits `ip` into host and port (the ip may carry a port; default 443). */
export function parsePeerAddress(ip: string): PeerAddress {
  const value = ip.trim();
  const bracketed = /^\[([0-9a-fA-F:.]+)\](?::(\d{1,5}))?$/.exec(value);
  if (bracketed) return { host: bracketed[1] as string, port: portOf(bracketed[2], ip) };
  if (isIP(value) === 6) return { host: value, port: 443 };
  const hostPort = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value);
  if (!hostPort || (hostPort[1] as string).startsWith('.') || (hostPort[1] as string).endsWith('-')) {
    throw new PeerAddressError(
      `'${ip}' is not an address: use an IPv4 address, [IPv6], or a DNS name, optionally with :port`,
    );
  }
  return { host: hostPort[1] as string, port: portOf(hostPort[2], ip) };
}

function portOf(text: string | undefined, ip: string): number {
  if (text === undefined) return 443;
  const port = Number(text);
  if (port < 1 || port > 65535) throw new PeerAddressError(`'${ip}': port out of range`);
  return port;
}

/** The name the peer is addressed by: Host, SNI and the certificate check. */
export function peerServerName(route: PeerRoute): string {
  return route.hostname?.trim() || parsePeerAddress(route.ip).host;
}

/** `https://<hostname>:<port>`: the origin requests are written against. */
export function peerOrigin(route: PeerRoute): string {
  const { port } = parsePeerAddress(route.ip);
  const name = peerServerName(route);
  return urlOf('https', name, port);
}

export interface PeerAgentOptions {
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
}

export type PeerTrust =
  /** After pairing: the peer CA received in the PSK-signed handshake, and nothing else. */
  | { caPem: string }
  /**
   * The TLS bootstrap, for the first /remote/pair
   * only: the private peer CA is not known yet, so the chain cannot be
   * validated; the hostname is still pinned, and the caller must accept the
   * CA returned in the answer only when the answer's HMAC verifies and the
   * leaf seen here chains to that CA (see verifyLeafIssuedBy).
   */
  | { bootstrap: true };

export interface PeerAgent {
  readonly agent: Agent;
  readonly origin: string;
  /** Bootstrap only: the leaf certificate the peer presented on the last connection. */
  presentedLeaf(): X509Certificate | null;
  close(): Promise<void>;
}

export function createPeerAgent(route: PeerRoute, trust: PeerTrust, options: PeerAgentOptions = {}): PeerAgent {
  const address = parsePeerAddress(route.ip);
  const servername = peerServerName(route);
  const bootstrap = 'bootstrap' in trust;
  let leaf: X509Certificate | null = null;
  const base = buildConnector({
    timeout: options.connectTimeoutMs ?? 10_000,
    ...(bootstrap ? { rejectUnauthorized: false, maxCachedSessions: 0 } : { ca: trust.caPem }),
    ...(isIP(servername) ? {} : { servername }),
  });
  const connect: buildConnector.connector = (opts, callback) => {
    base({ ...opts, hostname: address.host }, (error, socket) => {
      if (error || !socket) return callback(error ?? new Error('connect failed'), null);
      if (!bootstrap) return callback(null, socket);
      const pinned = pinHostname(socket as TLSSocket, servername);
      if (pinned instanceof Error) {
        socket.destroy();
        return callback(pinned, null);
      }
      leaf = pinned;
      return callback(null, socket);
    });
  };
  const agent = new Agent({
    connect,
    connectTimeout: options.connectTimeoutMs ?? 10_000,
    headersTimeout: options.headersTimeoutMs ?? 30_000,
    bodyTimeout: options.bodyTimeoutMs ?? 30_000,
  });
  return { agent, origin: peerOrigin(route), presentedLeaf: () => leaf, close: () => agent.close() };
}

/** Bootstrap hostname pinning: the leaf must name `servername` even though its chain is not yet trusted. */
function pinHostname(socket: TLSSocket, servername: string): X509Certificate | Error {
  const cert = socket.getPeerCertificate();
  const mismatch = checkServerIdentity(servername, cert);
  if (mismatch) return mismatch;
  return socket.getPeerX509Certificate() ?? new Error('peer presented no certificate');
}

/** True when `leaf` was issued and signed by the CA in `caPem` (closes the bootstrap: no MITM leaf passes). */
export function verifyLeafIssuedBy(leaf: X509Certificate, caPem: string): boolean {
  try {
    const ca = new X509Certificate(caPem);
    return ca.ca && leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
  } catch {
    return false;
  }
}
