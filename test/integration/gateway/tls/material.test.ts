/**
 * The TLS material in place is kept only while it is still right — same names, more than 30 days left, issued and
 * signed by this data dir's CA — and re-issued otherwise (gateway/tls/material.ts checks it without the issuer).
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureTlsMaterial } from '../../../../gateway/tls/material.ts';

const DAY_MS = 86_400_000;

function tlsDirs(t: { after(fn: () => void): void }): { a: string; b: string } {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-tls-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return { a: join(root, 'a'), b: join(root, 'b') };
}

const options = (tlsDir: string, now = new Date()) => ({ tlsDir, names: ['localhost'], clusterName: 'c', now });
const issuedBy = (certPem: string, caPem: string) =>
  new X509Certificate(certPem).checkIssued(new X509Certificate(caPem));

test('a warm start keeps the certificate; one from another CA is replaced by one of this CA', async (t) => {
  const { a, b } = tlsDirs(t);
  const first = await ensureTlsMaterial(options(a));
  assert.deepEqual(await ensureTlsMaterial(options(a)), first);
  const other = await ensureTlsMaterial(options(b));
  copyFileSync(join(b, 'server.pem'), join(a, 'server.pem'));
  copyFileSync(join(b, 'server-key.pem'), join(a, 'server-key.pem'));
  const replaced = await ensureTlsMaterial(options(a));
  assert.equal(replaced.caPem, first.caPem);
  assert.notEqual(replaced.certPem, other.certPem);
  assert.ok(issuedBy(replaced.certPem, first.caPem));
});

test('a certificate within 30 days of expiry is re-issued under the same CA', async (t) => {
  const { a } = tlsDirs(t);
  const first = await ensureTlsMaterial(options(a));
  const later = await ensureTlsMaterial(options(a, new Date(Date.now() + 370 * DAY_MS)));
  assert.equal(later.caPem, first.caPem);
  assert.notEqual(later.certPem, first.certPem);
  assert.ok(issuedBy(later.certPem, first.caPem));
});
