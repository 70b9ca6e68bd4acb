/**
 * Classifies an outbound failure (to a peer, or to a runtime upstream) into one stable layer reason: the same names
 * diagnose reports, the pairing and ping errors carry, and the mesh proxy puts in `cause` of its 502. The runtime
 * proxy reads the same classification for its own reasons and for what it may retry: `phase` tells whether any byte
 * of the request can have reached the peer.
 */
export type TransportLayer = 'dns' | 'tcp' | 'tls' | 'http';

export type TransportReason =
  | 'dns_unresolvable'
  | 'connection_failed'
  | 'connection_timeout'
  | 'tls_untrusted_ca'
  | 'tls_hostname_mismatch'
  | 'tls_handshake_failed'
  | 'peer_unreachable';

/**
 * How far the exchange got. `connect`: no connection was established, so nothing was sent (DNS, refused, connect
 * timeout, TLS handshake). `reset`: the connection was reset (RST, a write to a closed socket). `dropped`: the peer
 * closed it before answering. `exchange`: a timeout or anything else once the request was under way. `closed`: our
 * own client was closed or destroyed (shutdown, a removed upstream).
 */
export type TransportPhase = 'connect' | 'reset' | 'dropped' | 'exchange' | 'closed';

export interface TransportFailure {
  layer: TransportLayer;
  phase: TransportPhase;
  reason: TransportReason;
  /** The low-level code (ECONNREFUSED, SELF_SIGNED_CERT_IN_CHAIN, ...), never a secret. */
  detail: string;
  /** 504 for timeouts, 502 otherwise. */
  status: 502 | 504;
}

const UNTRUSTED_CA = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
]);

const TABLE: Record<string, Omit<TransportFailure, 'detail'>> = {
  ENOTFOUND: { layer: 'dns', phase: 'connect', reason: 'dns_unresolvable', status: 502 },
  EAI_AGAIN: { layer: 'dns', phase: 'connect', reason: 'dns_unresolvable', status: 502 },
  EAI_FAIL: { layer: 'dns', phase: 'connect', reason: 'dns_unresolvable', status: 502 },
  ECONNREFUSED: { layer: 'tcp', phase: 'connect', reason: 'connection_failed', status: 502 },
  EHOSTUNREACH: { layer: 'tcp', phase: 'connect', reason: 'connection_failed', status: 502 },
  ENETUNREACH: { layer: 'tcp', phase: 'connect', reason: 'connection_failed', status: 502 },
  EADDRNOTAVAIL: { layer: 'tcp', phase: 'connect', reason: 'connection_failed', status: 502 },
  ECONNRESET: { layer: 'tcp', phase: 'reset', reason: 'connection_failed', status: 502 },
  EPIPE: { layer: 'tcp', phase: 'reset', reason: 'connection_failed', status: 502 },
  UND_ERR_SOCKET: { layer: 'tcp', phase: 'dropped', reason: 'connection_failed', status: 502 },
  UND_ERR_CLOSED: { layer: 'tcp', phase: 'closed', reason: 'connection_failed', status: 502 },
  UND_ERR_DESTROYED: { layer: 'tcp', phase: 'closed', reason: 'connection_failed', status: 502 },
  ETIMEDOUT: { layer: 'tcp', phase: 'exchange', reason: 'connection_timeout', status: 504 },
  UND_ERR_CONNECT_TIMEOUT: { layer: 'tcp', phase: 'connect', reason: 'connection_timeout', status: 504 },
  UND_ERR_HEADERS_TIMEOUT: { layer: 'http', phase: 'exchange', reason: 'connection_timeout', status: 504 },
  UND_ERR_BODY_TIMEOUT: { layer: 'http', phase: 'exchange', reason: 'connection_timeout', status: 504 },
  ERR_TLS_CERT_ALTNAME_INVALID: { layer: 'tls', phase: 'connect', reason: 'tls_hostname_mismatch', status: 502 },
};

/** Walks the cause chain (undici wraps socket errors) and names the first code it knows. */
export function classifyTransportError(error: unknown): TransportFailure {
  for (let e: unknown = error, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = String((e as { code?: unknown }).code ?? '');
    if (UNTRUSTED_CA.has(code))
      return { layer: 'tls', phase: 'connect', reason: 'tls_untrusted_ca', status: 502, detail: code };
    const known = TABLE[code];
    if (known) return { ...known, detail: code };
    if (code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS'))
      return { layer: 'tls', phase: 'connect', reason: 'tls_handshake_failed', status: 502, detail: code };
  }
  // An AbortSignal.timeout() firing (the websocket upgrade's own deadline) names no code, only its error name.
  const name = error instanceof Error ? error.name : 'Error';
  if (name === 'TimeoutError')
    return { layer: 'http', phase: 'exchange', reason: 'connection_timeout', status: 504, detail: name };
  return { layer: 'tcp', phase: 'exchange', reason: 'peer_unreachable', status: 502, detail: name };
}
