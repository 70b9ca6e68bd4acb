import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePeerAddress, peerOrigin } from '../../../../gateway/mesh/peer-agent.ts';

const cases: { ip: string; host?: string; port?: number; error?: true }[] = [
  { ip: '10.0.0.12', host: '10.0.0.12', port: 443 },
  { ip: '127.0.0.1:8443', host: '127.0.0.1', port: 8443 },
  { ip: '[::1]:8443', host: '::1', port: 8443 },
  { ip: '[::1]', host: '::1', port: 443 },
  { ip: '::1', host: '::1', port: 443 },
  { ip: 'fed-b.example.internal', host: 'fed-b.example.internal', port: 443 },
  { ip: 'fed-b.example.internal:9443', host: 'fed-b.example.internal', port: 9443 },
  { ip: 'host:0', error: true },
  { ip: 'host:70000', error: true },
  { ip: 'https://host/path', error: true },
  { ip: 'a b', error: true },
];

for (const c of cases) {
  test(`parsePeerAddress(${JSON.stringify(c.ip)})`, () => {
    if (c.error) assert.throws(() => parsePeerAddress(c.ip), /PeerAddressError|not an address|out of range/);
    else assert.deepEqual(parsePeerAddress(c.ip), { host: c.host, port: c.port });
  });
}

test('the origin carries the hostname (Host/SNI) and the port of the ip', () => {
  assert.equal(peerOrigin({ ip: '127.0.0.1:8443', hostname: 'fed-b.test' }), 'https://fed-b.test:8443');
  assert.equal(peerOrigin({ ip: '10.0.0.12', hostname: 'fed-b.test' }), 'https://fed-b.test');
  assert.equal(peerOrigin({ ip: '[::1]:8443', hostname: null }), 'https://[::1]:8443');
});
