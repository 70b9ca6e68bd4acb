/**
 * The public certificate replaced while the gateway serves: the operator's files rewritten on disk go into every
 * worker's TLS context without a restart. Under a steady HTTP/2 and HTTP/1.1 load no request fails, new handshakes
 * get the new certificate, and no process is replaced. A pair that is not one is refused and the old one kept.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { connect } from 'node:tls';
import { issueCa, issueServerCertificate } from '../../../../gateway/tls/issue.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { steadyLoad, untilServed, workerPids, workersScratch } from '../../../helpers/workers.ts';

type Pair = { certPem: string; keyPem: string };

/** Written as a renewal tool does: each file whole, renamed over the old one, the key first. */
function install(dir: string, pair: Pair): void {
  for (const [name, text] of [
    ['server-key.pem', pair.keyPem],
    ['server.pem', pair.certPem],
  ] as const) {
    writeFileSync(join(dir, `${name}.new`), text, { mode: 0o600 });
    renameSync(join(dir, `${name}.new`), join(dir, name));
  }
}

/** The serial of the certificate a new TLS handshake gets, verified against `ca` for localhost. */
function servedSerial(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ca, ALPNProtocols: ['h2'] }, () => {
      resolve(new X509Certificate(socket.getPeerCertificate(true).raw).serialNumber);
      socket.end();
    });
    socket.once('error', reject);
  });
}

const reloadedBy = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.includes('"msg":"certificate files reloaded"'))
    .map((line) => (JSON.parse(line) as { pid: number }).pid);

test('rewritten certificate files rotate in every worker under load: 0 failed, new serial, same pids', async (t) => {
  const { dir, serve } = workersScratch(t, 'meshgate-rotation-');
  const ca = await issueCa('rotation-test', new Date());
  const first = await issueServerCertificate(ca, ['localhost', '127.0.0.1'], new Date());
  const second = await issueServerCertificate(ca, ['localhost', '127.0.0.1'], new Date());
  install(dir, first);
  const files = { PLATFORM_TLS_CERT_FILE: join(dir, 'server.pem'), PLATFORM_TLS_KEY_FILE: join(dir, 'server-key.pem') };
  const served = await serve(2, { ...files, PLATFORM_DATA_DIR: join(dir, 'data') }, join(dir, 'data'));
  const port = Number(new URL(served.base).port);
  const primary = served.child.pid as number;
  const workers = workerPids(primary).sort();
  assert.equal(workers.length, 2);
  const oldSerial = new X509Certificate(first.certPem).serialNumber;
  const newSerial = new X509Certificate(second.certPem).serialNumber;
  assert.equal(await servedSerial(port, ca.pem), oldSerial);

  const load = steadyLoad(
    { base: served.base, ca: ca.pem },
    {
      connections: 4,
      streams: 4,
      http1: 4,
      maxRequests: 200_000,
      maxMs: 90_000,
    },
  );
  await untilServed(load.result, 200);
  install(dir, second);
  // Each process with a listener reads the files again: both workers (and the primary, for its legacy ports).
  await waitFor(() => workers.every((pid) => reloadedBy(served.output()).includes(pid)), {
    what: 'every worker to reload the certificate files',
  });
  await untilServed(load.result, 200);
  for (let i = 0; i < 12; i++) assert.equal(await servedSerial(port, ca.pem), newSerial, `handshake ${i}`);
  const result = await load.stop();
  t.diagnostic(`rotation under load: ${result.ok} answered, ${result.failed} failed`);
  assert.equal(result.failed, 0, result.errors.join('; '));
  assert.equal(served.child.exitCode, null);
  assert.deepEqual(workerPids(primary).sort(), workers, 'no worker was replaced');

  // A key of another certificate is refused: the served certificate stays.
  const stranger = await issueServerCertificate(ca, ['localhost'], new Date());
  writeFileSync(join(dir, 'server-key.pem'), stranger.keyPem, { mode: 0o600 });
  await served.waitForLine(/certificate files changed but are not usable/);
  assert.equal(await servedSerial(port, ca.pem), newSerial);
  assert.doesNotMatch(served.output(), /BEGIN PRIVATE KEY|PRIVATE KEY-----/, 'no key in the log');
});
