/**
 * Who a client is, as far as per-client limits can tell from the network: its
 * remote address, with IPv6 taken by /64: interface identifiers are 64 bits
 * (RFC 4291 §2.5.1), so one host on a subnet may use any address of its /64
 * and rotate through them at will (temporary addresses, RFC 8981). Shared by
 * the login throttle and the upstream fair share.
 */
import { isIPv6 } from 'node:net';

/** The key of a remote address: IPv4 as is (IPv4-mapped IPv6 unwrapped), IPv6 by its /64. */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  // An address without a colon is IPv4 (most clients): no IPv6 parse on the request path.
  if (!address.includes(':')) return address;
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7);
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('::') as [string, string | undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : new Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  const groups = [...headGroups, ...zeros, ...tailGroups]
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, '').toLowerCase());
  return `${groups.join(':')}::/64`;
}
