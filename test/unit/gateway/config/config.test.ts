import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../../../gateway/config/load.ts';

test('defaults give the embedded appliance: HTTPS 8443 on loopback, data/var, no plain HTTP', () => {
  const config = loadConfig({ env: {} });
  assert.equal(config.httpsPort, 8443);
  assert.equal(config.httpPort, null);
  assert.equal(config.bind, '127.0.0.1');
  assert.equal(config.dataDir, 'data/var');
  assert.deepEqual(config.hostnames, ['localhost']);
  assert.ok(Object.isFrozen(config) && Object.isFrozen(config.limits), 'deep-frozen');
});

test('PLATFORM_* env vars are parsed into typed settings; overrides win over env, env over file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-config-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ clusterName: 'from-file', httpsPort: 1, limits: { maxHeaderCount: 50 } }));
  const config = loadConfig({
    file,
    env: {
      PLATFORM_HTTPS_PORT: '9443',
      PLATFORM_HOSTNAMES: 'a.example, b.example',
      PLATFORM_HTTP_PORT: '8080',
      PLATFORM_MAX_BODY_BYTES: '4096',
    },
    overrides: { bind: '127.0.0.2' },
  });
  assert.equal(config.clusterName, 'from-file');
  assert.equal(config.httpsPort, 9443);
  assert.equal(config.httpPort, 8080);
  assert.deepEqual(config.hostnames, ['a.example', 'b.example']);
  assert.equal(config.bind, '127.0.0.2');
  assert.equal(config.limits.maxHeaderCount, 50);
  assert.equal(config.limits.maxBodyBytes, 4096);
});

test('every problem is listed, each with its key path', () => {
  const error = (() => {
    try {
      loadConfig({
        env: { PLATFORM_HTTPS_PORT: 'eighty', PLATFORM_LOG_LEVEL: 'loud' },
        overrides: { httpPort: 70000, unknownKey: 1, limits: { maxHeaderCount: 1 } } as never,
      });
    } catch (e) {
      return e;
    }
    return null;
  })();
  assert.ok(error instanceof ConfigError);
  const text = error.problems.join('\n');
  for (const expected of ['PLATFORM_HTTPS_PORT', 'httpPort', 'logLevel', 'unknownKey', 'limits.maxHeaderCount']) {
    assert.match(text, new RegExp(expected.replace('.', '\\.')), `mentions ${expected}`);
  }
  assert.ok(error.problems.length >= 4);
});

test('start refuses an external URL and origin that disagree or name no certificate host', () => {
  assert.throws(
    () =>
      loadConfig({
        env: {
          PLATFORM_EXTERNAL_URL: 'https://a.example:8443',
          PLATFORM_ORIGIN: 'https://b.example:8443',
          PLATFORM_HOSTNAMES: 'a.example,b.example',
        },
      }),
    (e: ConfigError) => e.problems.some((p) => p.includes('must equal the origin')),
  );
  assert.throws(
    () => loadConfig({ env: { PLATFORM_EXTERNAL_URL: 'https://elsewhere.example' } }),
    (e: ConfigError) => e.problems.some((p) => p.includes('not one of hostnames')),
  );
  assert.throws(
    () => loadConfig({ env: { PLATFORM_ORIGIN: 'http://localhost:8443' } }),
    ConfigError,
    'origin must be https',
  );
  const ok = loadConfig({
    env: {
      PLATFORM_EXTERNAL_URL: 'https://a.example/platform',
      PLATFORM_ORIGIN: 'https://a.example',
      PLATFORM_HOSTNAMES: 'a.example',
    },
  });
  assert.equal(ok.origin, 'https://a.example');
});

test('a TLS certificate without its key is refused', () => {
  assert.throws(
    () => loadConfig({ env: { PLATFORM_TLS_CERT_FILE: '/tmp/cert.pem' } }),
    (e: ConfigError) => e.problems.some((p) => p.includes('both or neither')),
  );
});

test('an unreadable config file is reported, not thrown raw', () => {
  assert.throws(
    () => loadConfig({ env: {}, file: '/nonexistent/meshgate.json' }),
    (e: ConfigError) => e.problems[0]?.startsWith('config file'),
  );
});

test('workers: a count or auto, from a flag, the environment or the file; anything else is refused by key', () => {
  assert.equal(loadConfig({ env: {} }).workers, 1);
  assert.equal(loadConfig({ env: { PLATFORM_WORKERS: 'auto' } }).workers, 'auto');
  assert.equal(loadConfig({ env: { PLATFORM_WORKERS: '4' } }).workers, 4);
  assert.equal(loadConfig({ env: {}, overrides: { workers: 2 } }).workers, 2);
  for (const bad of ['0', 'two', '1.5', '-1']) {
    assert.throws(() => loadConfig({ env: { PLATFORM_WORKERS: bad } }), /workers/, bad);
  }
  assert.throws(() => loadConfig({ env: { PLATFORM_WORKER_LISTEN: 'fork' } }), /workerListen/);
});

test('an admin listener off loopback needs a metrics token, unless serving it open is allowed by name', () => {
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig({ env: { PLATFORM_ADMIN_PORT: '9464', ...env } });
      return [];
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      return error.problems;
    }
  };
  for (const bind of ['0.0.0.0', '::', '10.1.2.3', 'fd00::1', 'metrics.internal', '::ffff:10.0.0.1']) {
    const [problem, ...more] = problems({ PLATFORM_ADMIN_BIND: bind });
    assert.equal(more.length, 0, bind);
    assert.match(problem ?? '', /^admin\.metricsToken: .*PLATFORM_ADMIN_BIND.*PLATFORM_METRICS_TOKEN/, bind);
    assert.match(problem ?? '', /PLATFORM_ALLOW_UNAUTHENTICATED_METRICS=true/, bind);
    assert.deepEqual(problems({ PLATFORM_ADMIN_BIND: bind, PLATFORM_METRICS_TOKEN: 'a-token-of-16-chars+' }), []);
    assert.deepEqual(problems({ PLATFORM_ADMIN_BIND: bind, PLATFORM_ALLOW_UNAUTHENTICATED_METRICS: 'true' }), []);
    assert.deepEqual(problems({ PLATFORM_ADMIN_BIND: bind, PLATFORM_ADMIN_PORT: 'none' }), [], 'no listener');
  }
  for (const bind of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', 'localhost'])
    assert.deepEqual(problems({ PLATFORM_ADMIN_BIND: bind }), [], bind);
});
