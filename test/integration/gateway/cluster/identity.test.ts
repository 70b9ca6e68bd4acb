/**
 * Of the data dir's own files the cluster identity holds only the token issuer: a node takes the cluster's `issuer`
 * from the database, and no other path of the data dir is published or written, even one sealed under the right key.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ClusterIdentity, readNodeKey } from '../../../../gateway/cluster/identity.ts';
import { openTestDatabase } from '../../../helpers/engine.ts';

test('only the issuer file of the data dir travels with the identity', async (t) => {
  const { sql } = await openTestDatabase(t, 'postgres');
  const key = randomBytes(32);
  const [founder, joiner] = [1, 2].map(() => mkdtempSync(join(tmpdir(), 'meshgate-identity-'))) as [string, string];
  t.after(() => {
    for (const dir of [founder, joiner]) rmSync(dir, { recursive: true, force: true });
  });
  const issuer = 'urn:meshgate:cluster:6f1c1e52-8d0e-4a8e-9d55-0f1f6c1c2a10\n';
  writeFileSync(join(founder, 'issuer'), issuer);
  writeFileSync(join(founder, 'meshgate.pid'), '4242\n');
  const dataRoot = (dir: string) => ({ name: 'issuer', file: join(dir, 'issuer') });
  new ClusterIdentity(sql, key, [dataRoot(founder)]).publish();
  const paths = sql.prepare('SELECT path FROM cluster_files ORDER BY path').all() as { path: string }[];
  assert.deepEqual(
    paths.map((row) => row.path),
    ['issuer'],
    'the pid file is not published',
  );
  // A row for another data dir path, sealed under the right key (as a node without the filter would publish it).
  writeFileSync(join(founder, 'config.json'), '{"logLevel":"silent"}');
  new ClusterIdentity(sql, key, [{ name: 'data', dir: founder }]).publish();
  assert.equal(new ClusterIdentity(sql, key, [dataRoot(joiner)]).pull(), 1, 'one file written');
  assert.equal(readFileSync(join(joiner, 'issuer'), 'utf8'), issuer);
  assert.equal(existsSync(join(joiner, 'config.json')), false, 'a path outside the named files is never written');
});

test('a pull writes no file through a link planted in the data dir', async (t) => {
  const { sql } = await openTestDatabase(t, 'postgres');
  const key = randomBytes(32);
  const dirs = [1, 2, 3, 4].map(() => mkdtempSync(join(tmpdir(), 'meshgate-identity-')));
  t.after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const [founder, joiner, second, outside] = dirs as [string, string, string, string];
  const tls = (dir: string) => new ClusterIdentity(sql, key, [{ name: 'tls', dir: join(dir, 'tls') }]);
  mkdirSync(join(founder, 'tls', 'peers'), { recursive: true });
  writeFileSync(join(founder, 'tls', 'ca.pem'), 'cluster CA\n');
  writeFileSync(join(founder, 'tls', 'peers', 'peer.pem'), 'peer\n');
  tls(founder).publish();
  writeFileSync(join(outside, 'victim'), 'untouched\n');

  // A link at the name the file is staged under: replaced, not written through.
  mkdirSync(join(joiner, 'tls'));
  symlinkSync(join(outside, 'victim'), join(joiner, 'tls', `ca.pem.${process.pid}.tmp`));
  assert.equal(tls(joiner).pull(), 2);
  assert.equal(readFileSync(join(outside, 'victim'), 'utf8'), 'untouched\n');
  assert.equal(readFileSync(join(joiner, 'tls', 'ca.pem'), 'utf8'), 'cluster CA\n');
  assert.equal(lstatSync(join(joiner, 'tls', 'ca.pem')).mode & 0o777, 0o600);

  // A folder of the identity planted as a link out of the data dir: the pull refuses, and writes nothing at all.
  mkdirSync(join(second, 'tls'));
  symlinkSync(outside, join(second, 'tls', 'peers'));
  assert.throws(() => tls(second).pull(), /leaves its folder/);
  assert.equal(existsSync(join(outside, 'peer.pem')), false, 'nothing written through the linked folder');
  assert.equal(existsSync(join(second, 'tls', 'ca.pem')), false, 'nor any other file of the pull');
});

test('the node key file is read through a link (as a mounted secret is) and refused when others may read it', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-node-key-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const key = randomBytes(32);
  writeFileSync(join(dir, 'key'), key.toString('base64'), { mode: 0o600 });
  symlinkSync(join(dir, 'key'), join(dir, 'linked'));
  assert.ok(readNodeKey({ file: join(dir, 'linked'), base64: null }).equals(key));
  chmodSync(join(dir, 'key'), 0o644);
  assert.throws(() => readNodeKey({ file: join(dir, 'linked'), base64: null }), /readable by its owner only/);
});

test('a start leaves the ACME folder alone; publishPaths and pullPaths take only the paths named', async (t) => {
  const { sql } = await openTestDatabase(t, 'postgres');
  const key = randomBytes(32);
  const dirs = [1, 2].map(() => mkdtempSync(join(tmpdir(), 'meshgate-identity-')));
  t.after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const [orderer, starter] = dirs as [string, string];
  const tls = (dir: string) => new ClusterIdentity(sql, key, [{ name: 'tls', dir: join(dir, 'tls') }], ['tls/acme/']);
  for (const dir of dirs) mkdirSync(join(dir, 'tls', 'acme'), { recursive: true });
  writeFileSync(join(orderer, 'tls', 'ca.pem'), 'cluster CA\n');
  writeFileSync(join(orderer, 'tls', 'acme', 'certificate.pem'), 'first\n');
  writeFileSync(join(orderer, 'tls', 'acme', 'status.json'), '{}\n');
  tls(orderer).publish();
  const paths = () => (sql.prepare('SELECT path FROM cluster_files ORDER BY path').pluck().all() as string[]).join(' ');
  assert.equal(paths(), 'tls/ca.pem', 'a start does not publish the ACME folder');
  tls(orderer).publishPaths(['tls/acme/certificate.pem']);
  assert.equal(paths(), 'tls/acme/certificate.pem tls/ca.pem', 'only the path named');
  // A pull for the other files (a worker's start, a file another node published) leaves the ACME folder alone:
  // only the ACME code takes it, when it is ready for it.
  assert.equal(tls(starter).pull(), 1, 'the CA only');
  assert.equal(existsSync(join(starter, 'tls', 'acme', 'certificate.pem')), false);
  // A node starts (its pull, the ACME folder too), the orderer renews meanwhile, and the start ends (its publish):
  // the renewed certificate stays in the database, and the node's next pull of the folder takes it.
  tls(starter).pullUnder('tls/acme/');
  assert.equal(readFileSync(join(starter, 'tls', 'acme', 'certificate.pem'), 'utf8'), 'first\n');
  writeFileSync(join(orderer, 'tls', 'acme', 'certificate.pem'), 'renewed\n');
  tls(orderer).publishPaths(['tls/acme/certificate.pem']);
  tls(starter).publish();
  tls(starter).pull();
  assert.equal(readFileSync(join(starter, 'tls', 'acme', 'certificate.pem'), 'utf8'), 'first\n', 'not by a pull');
  tls(starter).pullPaths(['tls/acme/certificate.pem']);
  assert.equal(readFileSync(join(starter, 'tls', 'acme', 'certificate.pem'), 'utf8'), 'renewed\n');
  assert.throws(() => tls(starter).pullPaths(['tls/ca.pem']), /not under a managed prefix/);
  assert.equal(tls(starter).peek('tls/acme/certificate.pem')?.toString(), 'renewed\n');
  assert.throws(() => tls(orderer).publishPaths(['tls/ca.pem']), /not under a managed prefix/);
  rmSync(join(orderer, 'tls', 'acme', 'certificate.pem'));
  tls(orderer).publishPaths(['tls/acme/certificate.pem']);
  assert.equal(paths(), 'tls/ca.pem', 'a named path this node no longer has is removed');
});
