/**
 * Header hygiene for the runtime proxy (RFC 9110 §7.6.1, RFC 7239
 * conventions): hop-by-hop headers never cross, identity headers a client
 * could forge are dropped, X-Forwarded-* are set by us (we are the edge, so
 * inbound values are not trusted), and Location / Set-Cookie paths from an
 * upstream are moved under the deployment's public prefix.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { parseCookie } from 'cookie';
import { SESSION_COOKIE } from '../../gateway/http/session-cookie.ts';

/** RFC 9110 §7.6.1 plus the de-facto ones; `host` is set by the upstream pool. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'host',
  'expect',
]);

/** Headers only the gateway may assert upstream (identity and forwarding facts). */
const GATEWAY_OWNED = new Set(['forwarded', 'x-forwarded-user', 'x-user-attributes', 'x-real-ip']);

export interface ForwardFacts {
  clientIp: string;
  proto: 'https' | 'http';
  /** Host and port of the configured origin, never the request's Host header. */
  originHost: string;
  originPort: string;
  prefix: string;
  requestId: string;
  forwardAuthorization: boolean;
  user: { username: string; attributes: Readonly<Record<string, unknown>> } | null;
}

/** No header named by `Connection`: what nearly every message sends (none, `keep-alive` or `close`), shared. */
const NO_TOKENS: readonly string[] = Object.freeze([]);

/**
 * The header names a `Connection` header lists (RFC 9110 §7.6.1). `keep-alive` and `close` alone name nothing that
 * is not dropped anyway (keep-alive is hop-by-hop; close is no header), so they are read without a split.
 */
function connectionTokens(value: string | string[] | undefined): readonly string[] {
  if (value === undefined || value === 'keep-alive' || value === 'close') return NO_TOKENS;
  return String(value)
    .toLowerCase()
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}

/** Whether an inbound header may cross to the upstream at all (the cookie is then filtered on its own). */
function crossesUpstream(name: string, dropped: readonly string[], facts: ForwardFacts): boolean {
  if (name.charCodeAt(0) === 58 /* ':' h2 pseudo */) return false;
  if (
    HOP_BY_HOP.has(name) ||
    GATEWAY_OWNED.has(name) ||
    name.startsWith('x-forwarded-') ||
    name.startsWith('x-kz-mesh-')
  )
    return false;
  if (dropped.includes(name)) return false;
  return name !== 'authorization' || facts.forwardAuthorization;
}

/** Adds what the gateway itself asserts upstream: the forwarding facts and, for a signed-in caller, who it is. */
function addForwardingHeaders(out: Record<string, string | string[]>, facts: ForwardFacts): void {
  out['x-forwarded-for'] = facts.clientIp;
  out['x-forwarded-proto'] = facts.proto;
  out['x-forwarded-host'] = facts.originHost;
  out['x-forwarded-port'] = facts.originPort;
  if (facts.prefix) out['x-forwarded-prefix'] = facts.prefix; // a legacy port has none
  out['x-request-id'] = facts.requestId;
  if (facts.user) {
    out['x-forwarded-user'] = facts.user.username;
    if (Object.keys(facts.user.attributes).length > 0) out['x-user-attributes'] = JSON.stringify(facts.user.attributes);
  }
}

/** The headers sent upstream for one request. `upgrade` keeps the websocket handshake headers. */
export function upstreamRequestHeaders(
  inbound: IncomingHttpHeaders,
  facts: ForwardFacts,
): Record<string, string | string[]> {
  const dropped = connectionTokens(inbound.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in inbound) {
    const value = inbound[name];
    const sent = value === undefined ? undefined : upstreamValue(name, value, dropped, facts);
    if (sent) out[name] = sent;
  }
  addForwardingHeaders(out, facts);
  return out;
}

/** What of one inbound header goes upstream: the value, the cookie without the gateway's pairs, or nothing. */
function upstreamValue(
  name: string,
  value: string | string[],
  dropped: readonly string[],
  facts: ForwardFacts,
): string | string[] | undefined {
  // `te: trailers` is end to end in all but name: gRPC needs it, and it is the one TE that HTTP/2 allows
  // (RFC 9113 §8.2.2). Any other TE is the hop's own.
  if (name === 'te') return value === 'trailers' ? value : undefined;
  if (!crossesUpstream(name, dropped, facts)) return undefined;
  return name === 'cookie' ? withoutGatewayCookies(String(value)) || undefined : value;
}

/** The gateway's own cookie naming a deployment's replica (cookie affinity, exchange.ts). */
export const AFFINITY_COOKIE = 'meshgate_affinity';

/** Whether one `name=value` pair of a Cookie header is one of the gateway's, by the name the parser reads. */
function isGatewayPair(pair: string): boolean {
  const parsed = parseCookie(pair, { decode: (value) => value });
  return Object.hasOwn(parsed, SESSION_COOKIE) || Object.hasOwn(parsed, AFFINITY_COOKIE);
}

/**
 * The platform session cookie is the caller's credential, the affinity cookie the gateway's own: an upstream never
 * sees either. The other pairs pass byte for byte (a parse and re-serialise would re-encode their values).
 */
export function withoutGatewayCookies(cookie: string): string {
  if (!cookie.includes(SESSION_COOKIE) && !cookie.includes(AFFINITY_COOKIE)) return cookie;
  return cookie
    .split(';')
    .map((c) => c.trim())
    .filter((c) => c && !isGatewayPair(c))
    .join('; ');
}

/** Maps upstream paths to public ones: the inverse of the request path mapping. */
export interface PathMap {
  /** Path part of the upstream URL ('' when it is the root). */
  basePath: string;
  /** Public prefix, e.g. /runtime/apps/<id>. */
  prefix: string;
  stripPrefix: boolean;
  /** Origin of the upstream, to recognise absolute Locations pointing at it. */
  upstreamOrigin: string;
}

/** Upstream path → public path, or null when it lies outside what this target serves. */
export function publicPath(map: PathMap, path: string): string | null {
  let p = path;
  if (map.basePath) {
    if (p !== map.basePath && !p.startsWith(`${map.basePath}/`)) return null;
    p = p.slice(map.basePath.length) || '/';
  }
  return map.stripPrefix ? `${map.prefix}${p}` : p;
}

/** Rewrites a redirect target so the browser stays under the deployment's prefix; other targets pass. */
export function rewriteLocation(map: PathMap, location: string): string {
  if (location.startsWith('/') && !location.startsWith('//')) {
    const cut = location.search(/[?#]/);
    const path = cut === -1 ? location : location.slice(0, cut);
    const mapped = publicPath(map, path);
    return mapped === null ? location : mapped + (cut === -1 ? '' : location.slice(cut));
  }
  if (!location.startsWith(map.upstreamOrigin)) return location;
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    return location;
  }
  if (url.origin !== map.upstreamOrigin) return location;
  const mapped = publicPath(map, url.pathname);
  return mapped === null ? location : `${mapped}${url.search}${url.hash}`;
}

/** Moves a cookie's Path under the prefix and drops Domain (the upstream's host means nothing to the browser). */
export function rewriteSetCookie(map: PathMap, cookie: string): string {
  const parts = cookie.split(';');
  const out: string[] = [parts[0] as string];
  for (const raw of parts.slice(1)) {
    const attr = raw.trim();
    const lower = attr.toLowerCase();
    if (lower.startsWith('domain=')) continue;
    if (lower.startsWith('path=')) {
      const mapped = publicPath(map, attr.slice(5) || '/');
      // Path=/ becomes the bare prefix, which also matches the prefix itself (RFC 6265 §5.1.4); a legacy port (no
      // prefix) keeps `/`.
      out.push(
        `Path=${mapped === null ? attr.slice(5) : map.prefix && mapped === `${map.prefix}/` ? map.prefix : mapped}`,
      );
      continue;
    }
    out.push(attr);
  }
  return out.join('; ');
}

/** The headers sent back to the client: hop-by-hop removed, Location and cookies rewritten. */
export function downstreamResponseHeaders(upstream: IncomingHttpHeaders, map: PathMap): OutgoingHttpHeaders {
  const dropped = connectionTokens(upstream.connection);
  const out: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined || HOP_BY_HOP.has(name) || (dropped.length > 0 && dropped.includes(name))) continue;
    if (name === 'location') out.location = rewriteLocation(map, String(value));
    else if (name === 'set-cookie')
      out['set-cookie'] = (Array.isArray(value) ? value : [value]).map((c) => rewriteSetCookie(map, c));
    else out[name] = value;
  }
  return out;
}
