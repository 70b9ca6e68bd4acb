/** Which of the gateway's secret paths a sandbox's mounts would show to jobs, symlinks resolved. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exposedPaths } from '../../../../../../domains/jobs/runtimes/local/sandbox.ts';

test('a guarded path inside a mount, or holding one, is exposed; a sibling is not', () => {
  const guard = (setting: string, path: string) => [{ setting, path }];
  assert.equal(exposedPaths(['/srv/tls'], guard('tlsKeyFile', '/srv/tls/server-key.pem')).length, 1);
  assert.equal(exposedPaths(['/srv/data/keys'], guard('dataDir', '/srv/data')).length, 1, 'a mount of part of it');
  assert.equal(exposedPaths([], guard('dataDir', '/usr/local/var/meshgate')).length, 1, 'under a system dir');
  assert.equal(exposedPaths([], guard('tlsKeyFile', '/etc/ssl/certs/key.pem')).length, 1, 'under the CA bundle dir');
  assert.equal(exposedPaths([], guard('tlsKeyFile', '/etc/ssl/private/key.pem')).length, 0, 'never mounted');
  assert.equal(
    exposedPaths(['/srv/tls'], guard('tlsKeyFile', '/srv/tls-keys/key.pem')).length,
    0,
    'a sibling with a common prefix',
  );
  assert.match(
    exposedPaths(['/opt/py'], guard('secrets.kekDir', '/opt/py/kek'))[0] ?? '',
    /secrets\.kekDir \(\/opt\/py\/kek\).*\/opt\/py/,
  );
});
