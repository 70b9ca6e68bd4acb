/**
 * Why the ACME CA could not be reached, in words an operator can act on. acme-client sends its requests through
 * axios, and its retry interceptor reads the response of a request that never got one, so a refused connection,
 * a TLS failure or a name that does not resolve all surface as "Cannot read properties of undefined (reading
 * 'config')". When an order fails without an answer from the CA, the directory is asked once more here, with
 * node:https and the same trust, and the failure named: the directory URL (without credentials or query) and the
 * cause (connection refused, DNS, TLS, no answer in time).
 */
import { request } from 'node:https';

const PROBE_TIMEOUT_MS = 10_000;

const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'EPROTO',
]);

/** The URL as it may be shown: scheme, host and path; no user, password, query or fragment. */
export function shownUrl(url: string): string {
  const parsed = URL.parse(url);
  return parsed === null ? '(not a URL)' : `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/** The cause of a failed connection, named. */
export function describeNetworkError(error: NodeJS.ErrnoException): string {
  const code = error.code ?? '';
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused (ECONNREFUSED): nothing listens there';
    case 'ENOTFOUND':
      return 'DNS: the name does not resolve (ENOTFOUND)';
    case 'EAI_AGAIN':
      return 'DNS: no answer from the resolver (EAI_AGAIN)';
    case 'ECONNRESET':
      return 'the connection was reset (ECONNRESET)';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `no route to the host (${code})`;
    case 'ETIMEDOUT':
      return 'no answer in time (ETIMEDOUT)';
  }
  if (TLS_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) {
    return `TLS: ${error.message} (${code}); tls.acme.directoryCaFile sets the roots it is verified with`;
  }
  return code ? `${error.message} (${code})` : error.message;
}

/** Null when the directory answers over HTTPS (any status); else why it could not be reached. */
export function unreachableReason(directoryUrl: string, caPem: string | null): Promise<string | null> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (reason: string | null) => {
      if (settled) return;
      settled = true;
      resolve(reason);
    };
    try {
      const req = request(directoryUrl, { method: 'GET', ...(caPem ? { ca: caPem } : {}) }, (res) => {
        res.resume();
        done(null);
      });
      req.setTimeout(PROBE_TIMEOUT_MS, () => {
        done(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`);
        req.destroy();
      });
      req.on('error', (error: NodeJS.ErrnoException) => done(describeNetworkError(error)));
      req.end();
    } catch (error) {
      done((error as Error).message);
    }
  });
}

/** True for a failure that carries no answer of the CA: a network error, or acme-client's reading of one. */
export function withoutAnswer(error: unknown): boolean {
  if (error instanceof TypeError) return true;
  const axios = error as { isAxiosError?: boolean; response?: unknown };
  return axios?.isAxiosError === true && axios.response === undefined;
}

/**
 * `error`, or, when it carries no answer of the CA and the directory cannot be reached now, an error that says which
 * directory and why.
 */
export async function explained(error: unknown, directoryUrl: string, caPem: string | null): Promise<unknown> {
  if (!withoutAnswer(error)) return error;
  const reason = await unreachableReason(directoryUrl, caPem);
  if (reason === null) return error;
  return new Error(`the ACME directory ${shownUrl(directoryUrl)} could not be reached: ${reason}`);
}
