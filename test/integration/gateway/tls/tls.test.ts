import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { connect } from 'node:tls';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

function peerCert(gw: TestGateway, options: { ca?: string; servername: string }): Promise<X509Certificate> {
  const port = Number(new URL(gw.url).port);
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port, servername: options.servername, ...(options.ca ? { ca: options.ca } : {}) },
      () => {
        const cert = socket.getPeerX509Certificate();
        socket.end();
        cert ? resolve(cert) : reject(new Error('no certificate'));
      },
    );
    socket.on('error', reject);
  });
}

test(
  'the server certificate chains to the gateway CA and names the ' + 'hostnames, bind address and loopback',
  async (t) => {
    const gw = await startTestGateway(t, { hostnames: ['localhost', 'platform.test'] });
    const cert = await peerCert(gw, { ca: gw.gateway.caPem, servername: 'platform.test' });
    const ca = new X509Certificate(gw.gateway.caPem);
    assert.ok(cert.verify(ca.publicKey), 'issued by the platform CA');
    assert.ok(ca.ca, 'the CA is a CA');
    for (const name of ['DNS:localhost', 'DNS:platform.test', 'IP Address:127.0.0.1', 'IP Address:0:0:0:0:0:0:0:1']) {
      assert.ok(cert.subjectAltName?.includes(name), `${name} in ${cert.subjectAltName}`);
    }
    assert.equal(cert.checkHost('platform.test'), 'platform.test');
    assert.equal(
      readFileSync(join(gw.dataDir, 'tls', 'ca.pem'), 'utf8'),
      gw.gateway.caPem,
      'the CA is at <data-dir>/tls/ca.pem',
    );
  },
);

test('a client that does not trust the platform CA is refused: verification is real', async (t) => {
  const gw = await startTestGateway(t);
  await assert.rejects(peerCert(gw, { servername: 'localhost' }), /self.signed|unable to (get|verify)/i);
});

test('the certificate is re-issued when the name set changes, under the same CA', async (t) => {
  const gw = await startTestGateway(t);
  const first = await peerCert(gw, { ca: gw.gateway.caPem, servername: 'localhost' });
  const caBefore = gw.gateway.caPem;
  await gw.restart();
  const same = await peerCert(gw, { ca: gw.gateway.caPem, servername: 'localhost' });
  assert.equal(same.serialNumber, first.serialNumber, 'unchanged names: same certificate');
  (gw.overrides as { hostnames: string[] }).hostnames = ['localhost', 'renamed.test'];
  await gw.restart();
  const reissued = await peerCert(gw, { ca: gw.gateway.caPem, servername: 'renamed.test' });
  assert.notEqual(reissued.serialNumber, first.serialNumber);
  assert.ok(reissued.subjectAltName?.includes('DNS:renamed.test'));
  assert.equal(gw.gateway.caPem, caBefore, 'the CA survives restarts');
});

test('an operator-supplied certificate and key replace the issued one', async (t) => {
  const source = await startTestGateway(t, { hostnames: ['localhost', 'operator.test'] });
  const tls = join(source.dataDir, 'tls');
  const gw = await startTestGateway(t, {
    tlsCertFile: join(tls, 'server.pem'),
    tlsKeyFile: join(tls, 'server-key.pem'),
  });
  const cert = await peerCert(gw, { ca: source.gateway.caPem, servername: 'operator.test' });
  assert.ok(cert.subjectAltName?.includes('DNS:operator.test'));
});

test('HTTP/2 and HTTP/1.1 are both served on the TLS listener', async (t) => {
  const gw = await startTestGateway(t);
  const http2 = await import('node:http2');
  const session = http2.connect(gw.url, { ca: gw.gateway.caPem });
  t.after(() => session.close());
  const status = await new Promise<number>((resolve, reject) => {
    const req = session.request({ ':path': '/api/ping' });
    req.on('response', (headers) => resolve(Number(headers[':status'])));
    req.on('error', reject);
    req.end();
  });
  assert.equal(status, 200);
  assert.equal((await gw.request('GET', '/api/ping')).status, 200);
});
