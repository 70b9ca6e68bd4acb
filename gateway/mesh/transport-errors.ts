/**
 * Classifies an outbound failure to a peer into one stable layer reason:
 * the same names diagnose
 * reports, the pairing and ping errors carry, and the mesh proxy puts in
 * `cause` of its 502.
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

export interface TransportFailure {
  layer: TransportLayer;
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
  ENOTFOUND: { layer: 'dns', reason: 'dns_unresolvable', status: 502 },
  EAI_AGAIN: { layer: 'dns', reason: 'dns_unresolvable', status: 502 },
  EAI_FAIL: { layer: 'dns', reason: 'dns_unresolvable', status: 502 },
  ECONNREFUSED: { layer: 'tcp', reason: 'connection_failed', status: 502 },
  ECONNRESET: { layer: 'tcp', reason: 'connection_failed', status: 502 },
  EHOSTUNREACH: { layer: 'tcp', reason: 'connection_failed', status: 502 },
  ENETUNREACH: { layer: 'tcp', reason: 'connection_failed', status: 502 },
  EADDRNOTAVAIL: { layer: 'tcp', reason: 'connection_failed', status: 502 },
  EPIPE: { layer: 'tcp', reason: 'connection_failed', status: 502 },
  UND_ERR_SOCKET: { layer: 'tcp', reason: 'connection_failed', status: 502 },
  UND_ERR_CLOSED: { layer: 'tcp', reason: 'connection_failed', status: 502 },
  ETIMEDOUT: { layer: 'tcp', reason: 'connection_timeout', status: 504 },
  UND_ERR_CONNECT_TIMEOUT: { layer: 'tcp', reason: 'connection_timeout', status: 504 },
  UND_ERR_HEADERS_TIMEOUT: { layer: 'http', reason: 'connection_timeout', status: 504 },
  UND_ERR_BODY_TIMEOUT: { layer: 'http', reason: 'connection_timeout', status: 504 },
  ERR_TLS_CERT_ALTNAME_INVALID: { layer: 'tls', reason: 'tls_hostname_mismatch', status: 502 },
};

/** Walks the cause chain (undici wraps socket errors) and names the first code it knows. */
export function classifyTransportError(error: unknown): TransportFailure {
  for (let e: unknown = error, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = String((e as { code?: unknown }).code ?? '');
    if (UNTRUSTED_CA.has(code)) return { layer: 'tls', reason: 'tls_untrusted_ca', status: 502, detail: code };
    const known = TABLE[code];
    if (known) return { ...known, detail: code };
    if (code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS'))
      return { layer: 'tls', reason: 'tls_handshake_failed', status: 502, detail: code };
  }
  const name = error instanceof Error ? error.name : 'Error';
  return { layer: 'tcp', reason: 'peer_unreachable', status: 502, detail: name };
}
