/**
 * `meshgate validate` and the operator's certificate files, on the shipped artifact (test/helpers/artifact.ts): a
 * valid configuration exits 0 and leaves nothing behind; every problem is named with its setting, exit 2; and
 * `serve` with a missing file or a key of another certificate stops with that same line, not a raw errno or an
 * OpenSSL error. The pairs are made by the openssl command, as an operator's would be.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { execMeshgate, type Ran } from '../../../helpers/artifact.ts';
import { serve } from '../../../helpers/workers.ts';

type Failed = Ran & { code: number };

function scratch(t: { after(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-validate-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A self-signed P-256 pair for localhost: its certificate and key files. */
function pair(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}-key.pem`);
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'].concat([
      '-subj',
      '/CN=localhost',
      '-days',
      '2',
      '-keyout',
      key,
      '-out',
      cert,
    ]),
    { stdio: 'ignore' },
  );
  return { cert, key };
}

async function failing(run: Promise<Ran>): Promise<Failed> {
  try {
    const ran = await run;
    throw new Error(`expected a failure, got exit 0: ${ran.stdout}${ran.stderr}`);
  } catch (error) {
    if (typeof (error as { code?: unknown }).code !== 'number') throw error;
    return error as Failed;
  }
}

test('a valid configuration exits 0 and leaves nothing behind; the data dir is not created', async (t) => {
  const dir = scratch(t);
  const { cert, key } = pair(dir, 'server');
  const dataDir = join(dir, 'data');
  const env = { PLATFORM_TLS_CERT_FILE: cert, PLATFORM_TLS_KEY_FILE: key };
  const ran = await execMeshgate(['validate', '--data-dir', dataDir, '--https-port', '0'], env);
  assert.match(ran.stdout, /^meshgate validate: the configuration is valid/m);
  assert.equal(existsSync(dataDir), false, 'validate creates no data dir');
  assert.deepEqual(readdirSync(dir).sort(), ['server-key.pem', 'server.pem'], 'its probe left nothing');
});

test('every problem is named with its setting, exit 2: files, a key of another pair, data dir, port', async (t) => {
  const dir = scratch(t);
  const first = pair(dir, 'first');
  const second = pair(dir, 'second');
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.after(() => holder.close());
  const port = String((holder.address() as { port: number }).port);
  const mismatched = await failing(
    execMeshgate(['validate', '--data-dir', '/proc/meshgate-validate', '--https-port', port], {
      PLATFORM_TLS_CERT_FILE: first.cert,
      PLATFORM_TLS_KEY_FILE: second.key,
    }),
  );
  assert.equal(mismatched.code, 2);
  assert.match(mismatched.stderr, /^meshgate validate: 3 problems$/m);
  assert.match(
    mismatched.stderr,
    /tlsKeyFile \(PLATFORM_TLS_KEY_FILE\): .*second-key\.pem is not the key of the certif/,
  );
  assert.match(
    mismatched.stderr,
    /dataDir \(PLATFORM_DATA_DIR, --data-dir\): \/proc\/meshgate-validate cannot be created/,
  );
  assert.match(mismatched.stderr, new RegExp(`httpsPort .*: cannot listen on 127\\.0\\.0\\.1:${port}: the address is`));

  const notPem = join(dir, 'not.pem');
  writeFileSync(notPem, 'not a certificate');
  const missing = await failing(
    execMeshgate(['validate', '--data-dir', join(dir, 'data'), '--https-port', '0'], {
      PLATFORM_TLS_CERT_FILE: notPem,
      PLATFORM_TLS_KEY_FILE: join(dir, 'absent-key.pem'),
    }),
  );
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /tlsCertFile \(PLATFORM_TLS_CERT_FILE\): .*not\.pem holds no PEM certificate/);
  assert.match(missing.stderr, /tlsKeyFile \(PLATFORM_TLS_KEY_FILE\): .*absent-key\.pem: no such file/);
  assert.doesNotMatch(
    missing.stderr + mismatched.stderr,
    /ENOENT: no such file or directory, open|error:[0-9A-F]{8}|at /,
  );

  const schema = await failing(execMeshgate(['validate', '--https-port', 'x', '--log-level', 'loud']));
  assert.equal(schema.code, 2);
  for (const key of ['httpsPort', 'logLevel']) assert.match(schema.stderr, new RegExp(key));
});

test('serve with a missing certificate file or a key of another certificate stops with one clear line', async (t) => {
  const dir = scratch(t);
  const first = pair(dir, 'first');
  const second = pair(dir, 'second');
  for (const [certFile, keyFile, expected] of [
    [join(dir, 'absent.pem'), first.key, /tlsCertFile \(PLATFORM_TLS_CERT_FILE\): .*absent\.pem: no such file/],
    [first.cert, second.key, /tlsKeyFile \(PLATFORM_TLS_KEY_FILE\): .*second-key\.pem is not the key of/],
  ] as const) {
    const args = ['serve', '--data-dir', join(dir, 'data'), '--https-port', '0', '--workers', '1'];
    const env = { PLATFORM_TLS_CERT_FILE: certFile, PLATFORM_TLS_KEY_FILE: keyFile };
    const refused = await failing(execMeshgate(args, env));
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, expected);
    assert.doesNotMatch(refused.stderr, /ENOENT: no such file or directory, open|error:[0-9A-F]{8}|\n\s+at /);
    assert.doesNotMatch(refused.stdout, /meshgate listening/);
  }
});

test("the ports of this data dir's running gateway are not reported in use, with or without workers", async (t) => {
  const dir = scratch(t);
  for (const workers of ['1', '2']) {
    const dataDir = join(dir, `data-${workers}`);
    const served = await serve(dataDir, ['--https-port', '0', '--workers', workers], {});
    t.after(() => served.killTree());
    const port = new URL(served.base).port;
    const ran = await execMeshgate(['validate', '--data-dir', dataDir, '--https-port', port]);
    assert.match(ran.stdout, /the configuration is valid .*ports held by this data dir's running gateway/);
    const other = await failing(execMeshgate(['validate', '--data-dir', join(dir, 'other'), '--https-port', port]));
    assert.match(other.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
    assert.equal(await served.stop(), 0);
  }
});

test('ACME settings: a domain no CA validates, files beside ACME, unreadable roots and key files', async (t) => {
  const dir = scratch(t);
  const { cert, key } = pair(dir, 'server');
  const hmac = join(dir, 'hmac');
  writeFileSync(hmac, 'not base64url!\n', { mode: 0o600 });
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      tls: {
        acme: {
          directoryUrl: 'https://acme.invalid/directory',
          directoryCaFile: join(dir, 'missing.pem'),
          externalAccountBinding: { keyId: 'kid-1', hmacKeyFile: hmac },
          httpPort: 0,
        },
      },
    }),
  );
  const env = { PLATFORM_TLS_CERT_FILE: cert, PLATFORM_TLS_KEY_FILE: key };
  const refused = await failing(
    execMeshgate(['validate', '--config', join(dir, 'config.json'), '--data-dir', join(dir, 'data')], env),
  );
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /tls\.acme\.directoryUrl: give either ACME or tlsCertFile/);
  assert.match(refused.stderr, /hostnames: the deployment domain 'localhost' cannot be ordered over ACME/);

  const ok = { PLATFORM_HOSTNAMES: 'gw.example.com' };
  const files = await failing(
    execMeshgate(['validate', '--config', join(dir, 'config.json'), '--data-dir', join(dir, 'data')], ok),
  );
  assert.match(
    files.stderr,
    /tls\.acme\.directoryCaFile \(PLATFORM_ACME_DIRECTORY_CA_FILE\): .*missing\.pem cannot be read \(ENOENT\)/,
  );
  assert.match(files.stderr, /hmacKeyFile: .* does not hold a base64url key/);
  assert.doesNotMatch(files.stderr, /not base64url!/, 'the key file is never echoed');

  const wildcard = await failing(
    execMeshgate(['validate', '--data-dir', join(dir, 'data')], {
      PLATFORM_ACME_DIRECTORY_URL: 'https://acme.invalid/directory',
      PLATFORM_HOSTNAMES: 'gw.example.com',
      PLATFORM_ACME_NAMES: '*.example.com,10.0.0.1',
    }),
  );
  assert.match(wildcard.stderr, /tls\.acme\.names/);
});
