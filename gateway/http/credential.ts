/**
 * The credential a request presents: its `Authorization: Bearer` token (RFC 6750 §2.1), else the platform
 * session cookie where the route takes one (session-cookie.ts says where). The authenticate stage reads it once
 * per request; a check that runs again on an open exchange (a long stream, a websocket) reads it the same way.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { sessionCookieValue } from './session-cookie.ts';

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/** The bearer token of an Authorization header, or null. */
export function bearerOf(headers: IncomingHttpHeaders): string | null {
  const header = headers.authorization;
  if (typeof header !== 'string') return null;
  const match = BEARER.exec(header);
  return match ? (match[1] as string) : null;
}

/** The bearer, else the session cookie when `cookie` says the route takes it; null when neither is presented. */
export function presentedCredential(headers: IncomingHttpHeaders, cookie: boolean): string | null {
  return bearerOf(headers) ?? (cookie ? sessionCookieValue(headers.cookie) : null);
}
