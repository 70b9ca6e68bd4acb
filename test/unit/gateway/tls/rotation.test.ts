/**
 * Certificate rotation in one process, on loopback: the operator-files watcher reads the pair only for events on
 * its two names or a Kubernetes secret's `..data` swap, and however long its settle time, within two seconds of a
 * change; a replaced certificate keeps the listener's protocol floor (setSecureContext would otherwise fall back
 * to the process default).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import tls from 'node:tls';
import { limitsSettings } from '../../../../gateway/config/limits-schema.ts';
import { createHttpsListener } from '../../../../gateway/http/listeners.ts';
import { issueCa, issueServerCertificate } from '../../../../gateway/tls/issue.ts';
import { type OperatorMaterial, watchOperatorFiles } from '../../../../gateway/tls/operator-files.ts';
import { ServingCertificate } from '../../../../gateway/tls/serving-certificate.ts';
import { waitFor } from '../../../helpers/wait.ts';

const NAMES = ['localhost'];

function scratch(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-rotation-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function watching(t: TestContext, certFile: string, keyFile: string, settleMs: number) {
  const changes: OperatorMaterial[] = [];
  const problems: string[][] = [];
  const watcher = watchOperatorFiles(
    { certFile, keyFile },
    (material) => changes.push(material),
    (found) => problems.push(found),
    (folder, error) => problems.push([`${folder}: ${error.message}`]),
    settleMs,
  );
  t.after(() => watcher.close());
  return { changes, problems };
}

test('only the two files count; a change is read within two seconds however long the settle time', async (t) => {
  const dir = scratch(t);
  const ca = await issueCa('rotation-unit', new Date());
  const first = await issueServerCertificate(ca, NAMES, new Date());
  const certFile = join(dir, 'server.pem');
  const keyFile = join(dir, 'server-key.pem');
  writeFileSync(certFile, first.certPem);
  writeFileSync(keyFile, first.keyPem);
  const { changes, problems } = watching(t, certFile, keyFile, 50);
  // Another file of the folder, even a half-written pair beside ours: nothing is read.
  for (let n = 0; n < 5; n++) writeFileSync(join(dir, `other-${n}.pem`), 'not a certificate');
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.deepEqual([changes.length, problems.length], [0, 0]);
  // Our key file broken: read, and refused.
  writeFileSync(keyFile, 'not a key');
  await waitFor(() => problems.length > 0, { what: 'the broken key refused' });

  const slow = scratch(t);
  const second = await issueServerCertificate(ca, NAMES, new Date());
  writeFileSync(join(slow, 'server.pem'), first.certPem);
  writeFileSync(join(slow, 'server-key.pem'), first.keyPem);
  const patient = watching(t, join(slow, 'server.pem'), join(slow, 'server-key.pem'), 600_000);
  writeFileSync(join(slow, 'server-key.pem'), second.keyPem);
  writeFileSync(join(slow, 'server.pem'), second.certPem);
  await waitFor(() => patient.changes.length > 0, { timeoutMs: 30_000, what: 'the new pair read' });
  assert.equal(patient.changes[0]?.certPem, second.certPem);
});

test("a Kubernetes secret volume's ..data swap is seen", async (t) => {
  const dir = scratch(t);
  const ca = await issueCa('rotation-unit', new Date());
  const publish = (version: string, pair: { certPem: string; keyPem: string }) => {
    mkdirSync(join(dir, version));
    writeFileSync(join(dir, version, 'tls.crt'), pair.certPem);
    writeFileSync(join(dir, version, 'tls.key'), pair.keyPem);
    // As the kubelet does (pkg/volume/util/atomic_writer.go): a new link, renamed over ..data.
    symlinkSync(version, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  publish('..2026_01', await issueServerCertificate(ca, NAMES, new Date()));
  symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
  symlinkSync('..data/tls.key', join(dir, 'tls.key'));
  const { changes } = watching(t, join(dir, 'tls.crt'), join(dir, 'tls.key'), 50);
  const next = await issueServerCertificate(ca, NAMES, new Date());
  publish('..2026_02', next);
  await waitFor(() => changes.length > 0, { what: 'the swapped pair read' });
  assert.equal(changes[0]?.certPem, next.certPem);
});

test('a replaced certificate keeps the listener’s TLS 1.2 floor, whatever the process default', async (t) => {
  const ca = await issueCa('rotation-unit', new Date());
  const certificate = new ServingCertificate(await issueServerCertificate(ca, NAMES, new Date()));
  const server = createHttpsListener(certificate.current, limitsSettings.parse({}), (_req, res) => res.end());
  certificate.attach(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const defaultMin = tls.DEFAULT_MIN_VERSION;
  // The process default raised above the listener's: a context that lost the listener's floor would take it.
  tls.DEFAULT_MIN_VERSION = 'TLSv1.3';
  t.after(() => {
    tls.DEFAULT_MIN_VERSION = defaultMin;
    server.close();
  });
  certificate.replace(await issueServerCertificate(ca, NAMES, new Date()));
  const protocol = await new Promise<string | null>((resolve, reject) => {
    const only12 = { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' } as const;
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.pem, ...only12 });
    socket.once('secureConnect', () => {
      resolve(socket.getProtocol());
      socket.end();
    });
    socket.once('error', reject);
  });
  assert.equal(protocol, 'TLSv1.2');
});
