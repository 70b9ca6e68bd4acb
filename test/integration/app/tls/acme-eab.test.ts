/**
 * External account binding (RFC 8555 §7.3.4) against Pebble configured to require it
 * (`externalAccountBindingRequired`, test/helpers/peers/pebble.ts): the gateway as it ships, with the right key id and
 * MAC key, creates its account and obtains the certificate; with a MAC key the CA does not hold, the order fails
 * with a line that says the CA refused the binding, `meshgate cert status` shows it, and no MAC key is printed.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { startPebble } from '../../../helpers/peers/pebble.ts';
import { freePort, type Served, serve } from '../../../helpers/workers.ts';

const HOST = 'gw.meshgate.test';
const KEY_ID = 'meshgate-test-kid';

test('an account bound with the right EAB key gets the certificate; a wrong key is refused in words', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-acme-eab-'));
  const started: Served[] = [];
  t.after(async () => {
    for (const gateway of started) await gateway.killTree();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  const macKey = randomBytes(32).toString('base64url');
  const wrongKey = randomBytes(32).toString('base64url');
  const [tlsPort, httpPort] = [await freePort(), await freePort()];
  const pebble = await startPebble(t, { httpPort, tlsPort, externalAccountKeys: { [KEY_ID]: macKey } });
  const run = async (name: string, key: string) => {
    const keyFile = join(dir, `${name}.mac`);
    writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
    const configFile = join(dir, `${name}.json`);
    const acme = {
      directoryUrl: pebble.directoryUrl,
      directoryCaFile: pebble.directoryCaFile,
      challenges: ['tls-alpn-01'],
      externalAccountBinding: { keyId: KEY_ID, hmacKeyFile: keyFile },
      retryMinSeconds: 3600,
    };
    writeFileSync(configFile, JSON.stringify({ tls: { acme } }));
    const dataDir = join(dir, name);
    const args = ['--https-port', String(tlsPort), '--bind', '127.0.0.1', '--hostname', HOST, '--log-level', 'info'];
    const gateway = await serve(dataDir, args, {
      PLATFORM_CONFIG_FILE: configFile,
      PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: 'acme-eab-admin-pw',
    });
    started.push(gateway);
    return { gateway, configFile, dataDir };
  };

  const right = await run('right', macKey);
  await right.gateway.waitForLine(/"msg":"ACME certificate issued"/);
  await right.gateway.stop();

  const wrong = await run('wrong', wrongKey);
  const failed = JSON.parse(await wrong.gateway.waitForLine(/"msg":"ACME order failed/)) as { err: string };
  t.diagnostic(`refused: ${failed.err}`);
  assert.match(failed.err, new RegExp(`^the CA refused the account's external account binding \\(key id ${KEY_ID};`));
  assert.doesNotMatch(failed.err, /Cannot read properties/);
  const status = await execMeshgate(
    ['cert', 'status', '--config', wrong.configFile, '--data-dir', wrong.dataDir, '--hostname', HOST],
    {},
  ).catch((error: { stdout?: string; code?: number }) => ({ stdout: error.stdout ?? '', code: error.code }));
  assert.ok(status.stdout.includes(`last error: ${failed.err} (at `), status.stdout);
  for (const text of [wrong.gateway.output(), right.gateway.output(), status.stdout]) {
    assert.ok(!text.includes(wrongKey) && !text.includes(macKey), 'no MAC key printed');
  }
});
