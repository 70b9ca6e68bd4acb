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

export function urlOf(scheme: 'https' | 'http', host: string, port: number): string {
  const defaultPort = scheme === 'https' ? 443 : 80;
  return `${scheme}://${hostForUrl(host)}${port === defaultPort ? '' : `:${port}`}`;
}

/** The public origin: PLATFORM_ORIGIN when set (no trailing slash), else the first hostname at the HTTPS port. */
export function deriveOrigin(config: Pick<Config, 'origin' | 'hostnames'>, httpsPort: number): string {
  if (config.origin) return config.origin.replace(/\/$/, '');
  return urlOf('https', config.hostnames[0] as string, httpsPort);
}
