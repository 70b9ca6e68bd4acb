/** One origin derivation for the server and every command: IPv6 literals bracketed (RFC 3986 §3.2.2). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authorityOf, deriveOrigin, hostForUrl, hostOfUrl, urlOf } from '../../../../gateway/http/origin.ts';

test('hosts in URLs: IPv6 literals are bracketed once, names and IPv4 stay as they are', () => {
  for (const [host, expected] of [
    ['::1', '[::1]'],
    ['fd00::10:1', '[fd00::10:1]'],
    ['[::1]', '[::1]'],
    ['127.0.0.1', '127.0.0.1'],
    ['gw.example.com', 'gw.example.com'],
  ] as const) {
    assert.equal(hostForUrl(host), expected, host);
  }
});

test('the default port is left out, any other is written', () => {
  assert.equal(urlOf('https', 'gw.example.com', 443), 'https://gw.example.com');
  assert.equal(urlOf('https', '::1', 8443), 'https://[::1]:8443');
  assert.equal(urlOf('http', '::1', 80), 'http://[::1]');
  assert.equal(urlOf('http', '10.0.0.1', 443), 'http://10.0.0.1:443');
});

test('PLATFORM_ORIGIN wins, else the first hostname at the HTTPS port; an IPv6 origin parses', () => {
  assert.equal(deriveOrigin({ origin: 'https://gw.example.com/', hostnames: ['::1'] }, 8443), 'https://gw.example.com');
  assert.equal(deriveOrigin({ origin: null, hostnames: ['gw.example.com', 'other'] }, 443), 'https://gw.example.com');
  const v6 = deriveOrigin({ origin: null, hostnames: ['2001:db8::1'] }, 8443);
  assert.equal(v6, 'https://[2001:db8::1]:8443');
  const parsed = new URL(v6);
  assert.equal(parsed.hostname, '[2001:db8::1]');
  assert.equal(parsed.port, '8443');
});

test('authorities always carry the port; a URL host comes back without brackets, and round-trips', () => {
  assert.equal(authorityOf('::1', 8443), '[::1]:8443');
  assert.equal(authorityOf('10.0.0.1', 443), '10.0.0.1:443');
  assert.equal(authorityOf('gw.example.com', 9443), 'gw.example.com:9443');
  assert.equal(hostOfUrl('https://[fd00::10:1]:8443/x'), 'fd00::10:1');
  assert.equal(hostOfUrl(new URL('https://gw.example.com')), 'gw.example.com');
  for (const host of ['::1', '192.0.2.7', 'gw.example.com'])
    assert.equal(hostOfUrl(urlOf('https', host, 8443)), host, host);
});
