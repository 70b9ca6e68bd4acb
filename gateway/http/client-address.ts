/**
 * The client's address behind the reverse proxies an operator trusts
 * (`auth.forwardAuth.trustedProxies`): the socket peer, unless that peer is a
 * trusted proxy, in which case the rightmost `X-Forwarded-For` address that
 * is not itself a trusted proxy, as nginx's realip module with
 * `real_ip_recursive on` (https://nginx.org/en/docs/http/ngx_http_realip_module.html).
 * What a client writes into the header itself lies left of what its first
 * trusted proxy appended, so it is never reached; from an untrusted peer the
 * header is not read at all.
 */
import { BlockList, isIP, isIPv6 } from 'node:net';
import type { NodeRequest } from './context.ts';

export class TrustedProxies {
  readonly #list = new BlockList();
  /** Whether any proxy is trusted: without one the header is never read. */
  readonly any: boolean;

  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      const [address = '', prefix] = entry.split('/');
      const family = isIPv6(address) ? 'ipv6' : 'ipv4';
      if (prefix === undefined) this.#list.addAddress(address, family);
      else this.#list.addSubnet(address, Number(prefix), family);
    }
    this.any = entries.length > 0;
  }

  #trusted(address: string): boolean {
    const plain = address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
    return this.#list.check(plain, isIPv6(plain) ? 'ipv6' : 'ipv4');
  }

  /** The client's address ('' when the socket has none: it closed before the request was read). */
  clientOf(req: NodeRequest): string {
    const peer = req.socket.remoteAddress ?? '';
    if (!this.any || !peer || !this.#trusted(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
    let client = peer;
    for (let at = forwarded.length - 1; at >= 0 && this.#trusted(client); at--) {
      const hop = (forwarded[at] as string).trim();
      // Only an address is a client: a hop that is not one (a name, garbage, a flood of bytes) ends the walk at the
      // last address a trusted proxy vouched for, as nginx's realip module does.
      if (isIP(hop) === 0) break;
      client = hop;
    }
    return client;
  }
}
