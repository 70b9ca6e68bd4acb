/**
 * ACME against Pebble (test/helpers/peers/pebble.ts), the gateway run as it ships (test/helpers/workers.ts serve):
 * one certificate for two names obtained and served by every worker, verified with Pebble's root; renewed; the
 * CA going away (the certificate keeps serving, the failure is logged and counted, the order retried); a restart
 * that reuses the stored certificate; the HTTP-01 listener's refusals; no order for a name not configured; the
 * account key never shown.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { connect } from 'node:tls';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { startPebble } from '../../../helpers/peers/pebble.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { freePort, type Served, serve } from '../../../helpers/workers.ts';

const NAMES = ['gw.meshgate.test', 'www.meshgate.test'];
const ISSUED = /"msg":"ACME certificate issued"/g;

/** The certificate a new handshake for `servername` gets, verified against `ca` (the handshake fails otherwise). */
function served(port: number, servername: string, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, ca, ALPNProtocols: ['http/1.1'] }, () => {
      resolve(new X509Certificate(socket.getPeerCertificate().raw));
      socket.end();
    });
    socket.once('error', reject);
  });
}

function http(port: number, path: string, host: string): Promise<{ status: number; location?: string; body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode as number, location: res.headers.location, body }));
    })
      .on('error', reject)
      .end();
  });
}

async function setUp(t: TestContext, acme: Record<string, unknown>, short = 86_400) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-acme-'));
  const started: Served[] = [];
  t.after(async () => {
    for (const gateway of started) await gateway.killTree();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  const [tlsPort, httpPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const pebble = await startPebble(t, { httpPort, tlsPort, shortLivedSeconds: short });
  const configFile = join(dir, 'config.json');
  const tls = { acme: { directoryUrl: pebble.directoryUrl, directoryCaFile: pebble.directoryCaFile, ...acme } };
  writeFileSync(configFile, JSON.stringify({ tls: { acme: { ...tls.acme, names: [NAMES[1]], httpPort } } }));
  const dataDir = join(dir, 'data');
  const start = async (workers: number) => {
    const args = ['--https-port', String(tlsPort), '--workers', String(workers), '--hostname', NAMES[0] as string];
    const gateway = await serve(dataDir, args, {
      PLATFORM_CONFIG_FILE: configFile,
      PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: 'acme-test-admin-pw',
      PLATFORM_ADMIN_PORT: String(adminPort),
    });
    started.push(gateway);
    return gateway;
  };
  const metrics = async () => (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  return { dataDir, configFile, tlsPort, httpPort, pebble, start, metrics };
}

test('two workers obtain one certificate for two names over TLS-ALPN-01 and serve it; no key is shown', async (t) => {
  const { dataDir, tlsPort, pebble, start, metrics } = await setUp(t, { challenges: ['tls-alpn-01'] });
  const gateway = await start(2);
  await gateway.waitForLine(ISSUED);
  const root = await pebble.issuingRoot();
  const first = await served(tlsPort, NAMES[0] as string, root);
  assert.deepEqual(
    first.subjectAltName?.split(', ').sort(),
    NAMES.map((n) => `DNS:${n}`),
  );
  // Every worker serves it: new connections land on either one.
  for (let i = 0; i < 10; i++) {
    const cert = await served(tlsPort, NAMES[i % 2] as string, root);
    assert.equal(cert.serialNumber, first.serialNumber);
  }
  for (const file of ['account-key.pem', 'certificate.pem', 'certificate-key.pem', 'status.json']) {
    assert.equal(statSync(join(dataDir, 'tls', 'acme', file)).mode & 0o777, 0o600, file);
  }
  const text = await metrics();
  for (const name of NAMES) {
    const line = `meshgate_certificate_expiry_timestamp_seconds{name="${name}"} ${first.validToDate.getTime() / 1000}`;
    assert.ok(text.includes(line), line);
  }

  // A name that is not configured gets the certificate in use, and orders nothing.
  const before = gateway.output().match(ISSUED)?.length;
  await assert.rejects(served(tlsPort, 'unconfigured.meshgate.test', root), /altnames/);
  assert.equal(gateway.output().match(ISSUED)?.length, before);
  assert.equal(gateway.output().match(/"msg":"ACME order begun"/g)?.length, 1, 'one order');

  const accountKey = readFileSync(join(dataDir, 'tls', 'acme', 'account-key.pem'), 'utf8');
  const keyBody = accountKey.split('\n')[1] as string;
  for (const [where, text] of [
    ['log', gateway.output()],
    ['metrics', await metrics()],
  ] as const) {
    assert.ok(!text.includes(keyBody) && !text.includes('PRIVATE KEY'), `no key in the ${where}`);
  }
});

test('HTTP-01: renewed; the CA away keeps the certificate with retries; a restart reuses the stored one', async (t) => {
  const acme = { challenges: ['http-01'], profile: 'shortlived', retryMinSeconds: 1 };
  const { tlsPort, httpPort, pebble, start, metrics, configFile, dataDir } = await setUp(t, acme, 60);
  const gateway = await start(1);
  await gateway.waitForLine(ISSUED);
  const firstRoot = await pebble.issuingRoot();
  const first = await served(tlsPort, NAMES[1] as string, firstRoot);

  // The HTTP-01 listener: no token is pending now; tricks on the path are refused, anything else redirected.
  const origin = `https://${NAMES[0]}:${tlsPort}`;
  for (const path of [
    '/.well-known/acme-challenge/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    '/.well-known/acme-challenge/../../../etc/passwd',
    '/.well-known/acme-challenge/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '/.well-known/acme-challenge//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    '/.well-known/%61cme-challenge/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    '/%2e%2e/.well-known/acme-challenge/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
  ]) {
    const answer = await http(httpPort, path, NAMES[0] as string);
    assert.ok(answer.status === 404 || answer.status === 308, `${path}: ${answer.status}`);
    assert.ok(!answer.body.includes('.'), `${path} served nothing: ${answer.body}`);
  }
  const redirected = await http(httpPort, '/api/ping?x=1', 'evil.example');
  assert.equal(redirected.status, 308);
  assert.equal(redirected.location, `${origin}/api/ping?x=1`, 'to the origin, never the Host asked for');
  assert.equal(redirected.body, '');

  // The CA goes away before the renewal (at two thirds of 60 s; the last third is the margin a busy machine needs
  // for the checks below): the certificate keeps serving, retried, counted.
  await pebble.stop();
  await gateway.waitForLine(/"msg":"ACME order failed; the certificate in use keeps serving"/, 70_000);
  await waitFor(async () => /meshgate_certificate_renewal_failures_total [1-9]/.test(await metrics()), {
    what: 'the failure counted',
  });
  assert.equal((await served(tlsPort, NAMES[0] as string, firstRoot)).serialNumber, first.serialNumber);
  await pebble.restart();
  await waitFor(() => (gateway.output().match(ISSUED)?.length ?? 0) >= 2, {
    timeoutMs: 40_000,
    what: `a renewal; gateway output:\n${gateway.output().slice(-3000)}`,
  });
  const renewedRoot = await pebble.issuingRoot();
  const renewed = await served(tlsPort, NAMES[0] as string, renewedRoot);
  assert.notEqual(renewed.serialNumber, first.serialNumber);

  // Restarted with the CA away: the stored certificate serves, no order is made.
  await gateway.stop();
  await pebble.stop();
  const again = await start(1);
  const reused = await served(tlsPort, NAMES[0] as string, renewedRoot);
  assert.equal(reused.serialNumber, renewed.serialNumber);
  assert.doesNotMatch(again.output(), ISSUED);
  assert.doesNotMatch(again.output(), /"msg":"ACME order/);

  const args = ['cert', 'status', '--config', configFile, '--data-dir', dataDir, '--hostname', NAMES[0] as string];
  const { stdout } = await execMeshgate(args, {});
  assert.match(stdout, /^names: gw\.meshgate\.test, www\.meshgate\.test$/m);
  assert.match(stdout, new RegExp(`^serial: ${renewed.serialNumber}$`, 'm'));
  assert.match(stdout, /^issued by directory: https:\/\/\S+$/m, 'the directory configured');
  assert.match(stdout, /^next renewal: \d{4}-/m);
  assert.match(stdout, /^last error: .+ \(at \d{4}-/m, 'the failure while the CA was away');
  assert.doesNotMatch(stdout, /PRIVATE KEY/);
});
