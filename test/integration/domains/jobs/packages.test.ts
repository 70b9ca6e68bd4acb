/**
 * python_packages: only catalog coordinates, installed
 * with hash checking from the operator's wheel folder into a per-job venv.
 * The wheels are built in the test, offline (test/fixtures/jobs/make_wheel.py).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { MARKER, py, wheelFolder } from '../../../helpers/jobs.ts';

const probe = py(
  `import json, sys, meshgate_probe; print("${MARKER}" + ` +
    `json.dumps({"value": meshgate_probe.VALUE, "venv": ` +
    `sys.prefix}))`,
);

test('an approved package is installed, hash-checked, into the job’s own virtualenv', async (t) => {
  const wheels = wheelFolder(t);
  const sha = wheels.build('meshgate-probe', '1.0.0', 'probe-ok');
  const catalogFile = wheels.catalog([{ name: 'meshgate-probe', version: '1.0.0', sha256: [sha] }]);
  const gw = await startTestGateway(t, { jobs: { pythonPackages: { catalogFile, wheelDir: wheels.dir } } });
  const token = await gw.adminToken();
  const run = await gw.request('POST', '/api/cluster/jobs/run', {
    token,
    json: { entrypoint: probe, python_packages: ['meshgate_probe==1.0.0'] },
  });
  assert.equal(run.json.status, 'SUCCEEDED', run.text);
  assert.equal(run.json.result.value, 'probe-ok');
  assert.equal(run.json.result.venv, join(gw.dataDir, 'jobs', run.json.id, 'venv'));
  const record = await gw.request('GET', `/api/cluster/jobs/${run.json.id}/status`, { token });
  assert.deepEqual(record.json.python_packages, [{ name: 'meshgate-probe', version: '1.0.0', sha256: [sha] }]);
  const without = await gw.request('POST', '/api/cluster/jobs/run', { token, json: { entrypoint: probe } });
  assert.equal(without.json.status, 'FAILED', 'another job does not see the package');
});

test('a package outside the catalog is refused with 400 before anything runs', async (t) => {
  const wheels = wheelFolder(t);
  const sha = wheels.build('meshgate-probe', '1.0.0', 'probe-ok');
  wheels.build('meshgate-probe', '2.0.0', 'not-approved');
  const catalogFile = wheels.catalog([{ name: 'meshgate-probe', version: '1.0.0', sha256: [sha] }]);
  const gw = await startTestGateway(t, { jobs: { pythonPackages: { catalogFile, wheelDir: wheels.dir } } });
  const token = await gw.adminToken();
  for (const pins of [['meshgate-probe==2.0.0'], ['meshgate-probe==1.0.0', 'requests==2.32.3']]) {
    for (const path of ['submit', 'run']) {
      const res = await gw.request('POST', `/api/cluster/jobs/${path}`, {
        token,
        json: { entrypoint: 'touch ran', python_packages: pins },
      });
      assert.equal(res.status, 400);
      assert.deepEqual(res.json.detail.reason, 'python_package_not_approved');
      assert.equal(res.json.detail.package, pins.at(-1));
    }
  }
  assert.deepEqual((await gw.request('GET', '/api/cluster/jobs/', { token })).json, [], 'no job was recorded');
});

test('a wheel that does not match the catalog hash fails the job before its entrypoint', async (t) => {
  const wheels = wheelFolder(t);
  wheels.build('meshgate-probe', '1.0.0', 'tampered');
  const catalogFile = wheels.catalog([{ name: 'meshgate-probe', version: '1.0.0', sha256: ['0'.repeat(64)] }]);
  const gw = await startTestGateway(t, { jobs: { pythonPackages: { catalogFile, wheelDir: wheels.dir } } });
  const token = await gw.adminToken();
  const run = await gw.request('POST', '/api/cluster/jobs/run', {
    token,
    json: { entrypoint: 'touch ran', python_packages: ['meshgate-probe==1.0.0'] },
  });
  assert.deepEqual([run.json.status, run.json.error_type], ['FAILED', 'python_package_install_failed']);
  const logs = await gw.request('GET', `/api/cluster/jobs/${run.json.id}/logs`, { token });
  assert.match(logs.json.logs, /THESE PACKAGES DO NOT MATCH THE HASHES/);
});

test('a malformed catalog file stops start with the problem named', async (t) => {
  const wheels = wheelFolder(t);
  const catalogFile = wheels.catalog([{ name: 'x', version: '1', sha256: ['not-hex'] }]);
  await assert.rejects(
    startTestGateway(t, { jobs: { pythonPackages: { catalogFile, wheelDir: wheels.dir } } }),
    /catalogFile .*sha256/,
  );
});
