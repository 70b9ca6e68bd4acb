/**
 * A CA that cannot be reached is named, not hidden behind the HTTP client's own failure: the gateway as it ships logs
 * which directory URL (without credentials or query) could not be reached and why — connection refused, a TLS
 * certificate its roots do not verify, a name that does not resolve — and `meshgate cert status` shows the same
 * last error. Real sockets on loopback: a port nothing listens on, an HTTPS server whose certificate chains to a CA
 * the gateway does not trust, and a name under `.invalid` (RFC 6761 §6.4: never resolves).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { issueCa, issueServerCertificate } from '../../../../gateway/tls/issue.ts';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { freePort, type Served, serve } from '../../../helpers/workers.ts';

const HOST = 'gw.meshgate.test';
const SECRET = 'not-for-logs';

test('an unreachable CA is named with its directory URL and the cause, in the log and in cert status', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-acme-unreachable-'));
  const started: Served[] = [];
  const ca = await issueCa('untrusted-acme', new Date());
  const pair = await issueServerCertificate(ca, ['127.0.0.1', 'localhost'], new Date());
  const untrusted = createServer({ cert: pair.certPem, key: pair.keyPem }, (_req, res) => res.end('{}'));
  await new Promise<void>((resolve) => untrusted.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const gateway of started) await gateway.killTree();
    untrusted.close();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  const closed = await freePort();
  const cases = [
    {
      name: 'refused',
      url: `https://acme:${SECRET}@127.0.0.1:${closed}/dir?token=${SECRET}`,
      shown: `https://127.0.0.1:${closed}/dir`,
      cause: /connection refused \(ECONNREFUSED\)/,
    },
    {
      name: 'tls',
      url: `https://localhost:${(untrusted.address() as AddressInfo).port}/directory`,
      shown: `https://localhost:${(untrusted.address() as AddressInfo).port}/directory`,
      cause: /TLS: .+ \([A-Z_]+\); tls\.acme\.directoryCaFile/,
    },
    {
      name: 'dns',
      url: 'https://acme.meshgate.invalid/directory',
      shown: 'https://acme.meshgate.invalid/directory',
      cause: /DNS: /,
    },
  ];
  for (const { name, url, shown, cause } of cases) {
    const configFile = join(dir, `${name}.json`);
    writeFileSync(
      configFile,
      JSON.stringify({ tls: { acme: { directoryUrl: url, httpPort: null, challenges: ['tls-alpn-01'] } } }),
    );
    const dataDir = join(dir, name);
    const args = ['--https-port', String(await freePort()), '--bind', '127.0.0.1', '--hostname', HOST];
    const gateway = await serve(dataDir, [...args, '--log-level', 'info'], {
      PLATFORM_CONFIG_FILE: configFile,
      PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: 'acme-unreachable-admin-pw',
    });
    started.push(gateway);
    const line = await gateway.waitForLine(/"msg":"ACME order failed/);
    const { err } = JSON.parse(line) as { err: string };
    t.diagnostic(`${name}: ${err}`);
    assert.ok(err.startsWith(`the ACME directory ${shown} could not be reached: `), `${name}: ${err}`);
    assert.match(err, cause, name);
    const status = await execMeshgate(
      ['cert', 'status', '--config', configFile, '--data-dir', dataDir, '--hostname', HOST],
      {},
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    assert.ok(status.stdout.includes(`last error: ${err} (at `), `${name}: ${status.stdout}`);
    assert.ok(!gateway.output().includes(SECRET) && !status.stdout.includes(SECRET), `${name}: no credential shown`);
    await gateway.stop();
  }
});
