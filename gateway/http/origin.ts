/**
 * The one place a URL authority is written from a host and a port. An IPv6
 * literal is bracketed (RFC 3986 §3.2.2: `IP-literal = "[" IPv6address "]"`),
 * so `::1` and port 8443 give `https://[::1]:8443`, never the unparseable
 * `https://::1:8443`; the default port is left out (RFC 3986 §3.2.3).
 */
import { isIPv6 } from 'node:net';
import type { Config } from '../config/schema.ts';

/** A host as it stands in a URL: IPv6 literals bracketed (an already bracketed one stays as is). */
export function hostForUrl(host: string): string {
  return isIPv6(host) ? `[${host}]` : host;
}

/** The host of a URL as an address or name: `URL.hostname` keeps an IPv6 literal's brackets, this drops them. */
export function hostOfUrl(url: string | URL): string {
  return new URL(url).hostname.replace(/^\[|\]$/g, '');
}

/** `host:port` as an authority (a URL's, a Host header's, a peer address): an IPv6 literal bracketed. */
export function authorityOf(host: string, port: number): string {
  return `${hostForUrl(host)}:${port}`;
}

export function urlOf(scheme: 'https' | 'http', host: string, port: number): string {
  const defaultPort = scheme === 'https' ? 443 : 80;
  return `${scheme}://${port === defaultPort ? hostForUrl(host) : authorityOf(host, port)}`;
}

/** The public origin: PLATFORM_ORIGIN when set (no trailing slash), else the first hostname at the HTTPS port. */
export function deriveOrigin(config: Pick<Config, 'origin' | 'hostnames'>, httpsPort: number): string {
  if (config.origin) return config.origin.replace(/\/$/, '');
  return urlOf('https', config.hostnames[0] as string, httpsPort);
}
