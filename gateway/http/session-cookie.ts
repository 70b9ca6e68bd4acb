/**
 * The platform session cookie (set by the frontend's /login/session): its
 * name, how its value is read, and when the API lets it stand in for a
 * bearer token. It is a credential a browser attaches by itself, so the API
 * accepts it only on a request that proves it comes from a page of the
 * gateway's own origin — the CSRF defence of every cookie-authenticated call —
 * and a websocket handshake only from a page of the origin it reaches.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { parseCookie } from 'cookie';

export const SESSION_COOKIE = 'meshgate_session';

/**
 * Cookie values are taken as sent: the session token is base64url, and a
 * percent-decoded value would differ from the one the gateway set. An empty
 * value is skipped, so a later pair of the same name still counts.
 */
const RAW_VALUES = { decode: (value: string) => value || undefined };

/** The session token of a Cookie header (RFC 6265 §5.4 pairs, parsed by `cookie`), or null. */
export function sessionCookieValue(cookie: string | undefined): string | null {
  if (!cookie?.includes(SESSION_COOKIE)) return null;
  return parseCookie(cookie, RAW_VALUES)[SESSION_COOKIE] ?? null;
}

/**
 * Whether a request provably comes from a page of `origin`. Browsers send
 * `Origin` on every cross-origin request and on same-origin ones except
 * GET/HEAD (Fetch standard, "append a request `Origin` header"); a same-origin
 * GET is recognised by its Fetch Metadata instead (`Sec-Fetch-Site`, W3C Fetch
 * Metadata Request Headers). A request with neither — a cross-site link, an
 * old client — does not count, whatever SameSite let through: SameSite=Lax
 * sends the cookie on top-level cross-site navigations, and SameSite of any
 * kind treats sibling subdomains as the same site.
 */
export function fromOwnOrigin(method: string, headers: IncomingHttpHeaders, origin: string): boolean {
  const sent = headers.origin;
  if (sent !== undefined) return sent === origin;
  return (method === 'GET' || method === 'HEAD') && headers['sec-fetch-site'] === 'same-origin';
}

/**
 * Whether a websocket handshake may use the session cookie it carries. Browsers send `Origin` on every handshake
 * (RFC 6455 §4.1 and §10.2) and websockets are not bound by CORS, so a page of another origin of the same site (a
 * sibling subdomain, another port of this host), to which SameSite=Lax still attaches the cookie, could otherwise
 * open one as the signed-in user. The handshake counts from the gateway's origin or from the origin of the listener
 * it reached (a legacy port's own pages); one without `Origin` comes from no browser, so no page made it.
 */
export function sameOriginHandshake(headers: IncomingHttpHeaders, origin: string, encrypted: boolean): boolean {
  const sent = headers.origin;
  if (sent === undefined || sent === origin) return true;
  return headers.host !== undefined && sent === `${encrypted ? 'https' : 'http'}://${headers.host}`;
}
