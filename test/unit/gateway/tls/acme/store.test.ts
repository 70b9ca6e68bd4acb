/**
 * What an ACME CA hands back is checked before it serves: another customer's names, a key that is not the
 * order's, a certificate not valid now are refused (the certificate in use is kept by the caller). The renewal
 * time is two thirds of the lifetime less jitter; the backoff doubles up to its cap.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { backoffMs, dueAt } from '../../../../../gateway/tls/acme/renewal.ts';
import { AcmeStore, checkIssued } from '../../../../../gateway/tls/acme/store.ts';
import { issueCa, issueServerCertificate } from '../../../../../gateway/tls/issue.ts';

const NAMES = ['gw.meshgate.test', 'www.meshgate.test'];

test('a certificate for exactly the names ordered, with the key ordered, valid now, is taken', async () => {
  const ca = await issueCa('acme-check', new Date());
  const issued = await issueServerCertificate(ca, [...NAMES].reverse(), new Date());
  assert.deepEqual(
    checkIssued(issued, NAMES, new Date()).serialNumber,
    new X509Certificate(issued.certPem).serialNumber,
  );
});

test('other names, missing names, another key, or not valid now are refused', async () => {
  const ca = await issueCa('acme-check', new Date());
  const now = new Date();
  const ours = await issueServerCertificate(ca, NAMES, now);
  const cases: [string, { certPem: string; keyPem: string }, RegExp, Date?][] = [
    ['other names', await issueServerCertificate(ca, ['evil.example', ...NAMES], now), /evil\.example/],
    ['a name missing', await issueServerCertificate(ca, [NAMES[0] as string], now), /not gw\.meshgate\.test/],
    ['another key', { certPem: ours.certPem, keyPem: (await issueServerCertificate(ca, NAMES, now)).keyPem }, /key/],
    ['expired', ours, /not valid now/, new Date(now.getTime() + 400 * 86_400_000)],
  ];
  for (const [what, pair, reason, at] of cases) {
    assert.throws(() => checkIssued(pair, NAMES, at ?? now), reason, what);
  }
});

test('renewal at two thirds of the lifetime, up to a thirtieth earlier; backoff doubles to six hours', async () => {
  const ca = await issueCa('acme-check', new Date());
  const certificate = new X509Certificate((await issueServerCertificate(ca, NAMES, new Date())).certPem);
  const from = certificate.validFromDate.getTime();
  const lifetime = certificate.validToDate.getTime() - from;
  assert.equal(dueAt(certificate, 0).getTime(), from + (lifetime * 2) / 3);
  assert.equal(dueAt(certificate, 1).getTime(), from + (lifetime * 2) / 3 - lifetime / 30);
  assert.deepEqual(
    [1, 2, 3].map((n) => backoffMs(n, 60_000, 0.5)),
    [60_000, 120_000, 240_000],
  );
  assert.equal(backoffMs(40, 60_000, 0.5), 6 * 3_600_000);
});

test('a symlink where a stored file goes is replaced, not written through; no temporary file stays', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-acme-store-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const store = new AcmeStore(dataDir);
  const ca = await issueCa('acme-check', new Date());
  store.saveCertificate(await issueServerCertificate(ca, NAMES, new Date()), 'https://ca.test/directory');
  const victim = join(dataDir, 'victim');
  writeFileSync(victim, 'untouched');
  rmSync(join(store.dir, 'certificate.pem'));
  symlinkSync(victim, join(store.dir, 'certificate.pem'));
  const pair = await issueServerCertificate(ca, NAMES, new Date());
  store.saveCertificate(pair, 'https://ca.test/directory');
  assert.equal(readFileSync(victim, 'utf8'), 'untouched');
  assert.ok(lstatSync(join(store.dir, 'certificate.pem')).isFile());
  assert.equal(store.certificate()?.certPem, pair.certPem);
  assert.equal((lstatSync(join(store.dir, 'certificate-key.pem')).mode & 0o777).toString(8), '600');
  assert.deepEqual(
    readdirSync(store.dir).filter((name) => name.endsWith('.tmp')),
    [],
  );
});
