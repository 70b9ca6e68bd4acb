/**
 * The renewal loop against a data dir under $TMPDIR and a CA played by gateway/tls/issue.ts (real certificates,
 * real keys): what a restart finds on disk decides whether it orders now, waits out a backoff, or renews. A
 * saved renewal time never holds back a first order, a certificate from another directory is neither usable nor
 * named as replaced, an order that never ends fails at its deadline, and a disk that refuses the status is logged
 * once without stopping the loop.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import type { AcmeSession } from '../../../../../gateway/tls/acme/order.ts';
import { RenewalLoop, servableStored, usableStored } from '../../../../../gateway/tls/acme/renewal.ts';
import { AcmeStore, NO_STATUS } from '../../../../../gateway/tls/acme/store.ts';
import { issueCa, issueServerCertificate } from '../../../../../gateway/tls/issue.ts';
import type { ServerKeyPair } from '../../../../../gateway/tls/serving-certificate.ts';

const NAMES = ['gw.meshgate.test', 'www.meshgate.test'];
const STAGING = 'https://staging.ca.test/directory';
const PRODUCTION = 'https://ca.test/directory';
const DAY_MS = 86_400_000;

type Ca = Awaited<ReturnType<typeof issueCa>>;

interface Run {
  readonly dataDir: string;
  readonly store: AcmeStore;
  readonly logs: Record<string, unknown>[];
  /** The certificate each order named as replaced (its serial), in order. */
  readonly replaced: (string | null)[];
  readonly failures: number[];
}

function scratch(): Run {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-renewal-'));
  return { dataDir, store: new AcmeStore(dataDir), logs: [], replaced: [], failures: [] };
}

/** A loop whose CA issues for the names ordered (or runs `order` instead); resolves `issued` with the first pair. */
function loopOf(
  run: Run,
  ca: Ca,
  options: { directoryUrl?: string; now?: () => Date; orderDeadlineMs?: number; order?: AcmeSession['order'] } = {},
) {
  let issued: (pair: ServerKeyPair) => void = () => {};
  const firstIssued = new Promise<ServerKeyPair>((resolve) => {
    issued = resolve;
  });
  const session: AcmeSession = {
    order:
      options.order ??
      (async (names, replaces) => {
        run.replaced.push(replaces?.serialNumber ?? null);
        return issueServerCertificate(ca, names, new Date());
      }),
    renewalWindow: async () => null,
  };
  const logger = pino({ level: 'info' }, { write: (line: string) => run.logs.push(JSON.parse(line)) });
  const loop = new RenewalLoop({
    names: NAMES,
    directoryUrl: options.directoryUrl ?? PRODUCTION,
    store: run.store,
    session: async () => session,
    retryMinMs: 5,
    orderDeadlineMs: options.orderDeadlineMs ?? 60_000,
    logger,
    now: options.now ?? (() => new Date()),
    onIssued: issued,
    onFailure: () => run.failures.push(run.failures.length + 1),
  });
  return { loop, firstIssued };
}

async function storedPair(run: Run, ca: Ca, names: readonly string[], directoryUrl: string): Promise<ServerKeyPair> {
  const pair = await issueServerCertificate(ca, names, new Date());
  run.store.saveCertificate(pair, directoryUrl);
  return pair;
}

const aMonthAhead = () => new Date(Date.now() + 30 * DAY_MS).toISOString();

test('no usable certificate: a saved renewal time in the future does not hold back the first order', async (t) => {
  const ca = await issueCa('acme-renewal', new Date());
  const cases: [string, (run: Run) => Promise<void>][] = [
    ['nothing stored, renewal time saved', async () => {}],
    [
      'the names changed, a backoff saved for the old ones',
      async (run) => {
        await storedPair(run, ca, ['old.meshgate.test'], PRODUCTION);
        run.store.saveStatus({ ...NO_STATUS, names: ['old.meshgate.test'], directoryUrl: PRODUCTION, failures: 3 });
      },
    ],
    [
      'the stored certificate expired',
      async (run) => {
        const pair = await issueServerCertificate(ca, NAMES, new Date(Date.now() - 400 * DAY_MS));
        run.store.saveCertificate(pair, PRODUCTION);
      },
    ],
  ];
  for (const [what, prepare] of cases) {
    const run = scratch();
    t.after(() => rmSync(run.dataDir, { recursive: true, force: true }));
    await prepare(run);
    const status = run.store.status();
    run.store.saveStatus({ ...status, nextRenewal: aMonthAhead() });
    const { loop, firstIssued } = loopOf(run, ca);
    loop.start();
    const pair = await firstIssued;
    await loop.close();
    assert.equal(usableStored(run.store, NAMES, PRODUCTION, new Date())?.serialNumber, serialOf(pair), what);
    assert.deepEqual(run.replaced, [null], what);
  }
});

test('a backoff left by a failure for the same names and directory is waited out across a restart', async (t) => {
  const ca = await issueCa('acme-renewal', new Date());
  const run = scratch();
  t.after(() => rmSync(run.dataDir, { recursive: true, force: true }));
  run.store.saveStatus({
    ...NO_STATUS,
    names: NAMES,
    directoryUrl: PRODUCTION,
    failures: 2,
    nextRenewal: aMonthAhead(),
  });
  const { loop } = loopOf(run, ca);
  loop.start();
  // Long enough for a timer of 0 and a whole order to have run, had one been started.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await loop.close();
  assert.deepEqual(run.replaced, []);
  // The same backoff under another directory is not this order's: it orders at once.
  const other = loopOf(run, ca, { directoryUrl: STAGING });
  other.loop.start();
  await other.firstIssued;
  await other.loop.close();
  assert.deepEqual(run.replaced, [null]);
});

test('a certificate from another directory is not usable and not replaced; from this one it is renewed', async (t) => {
  const ca = await issueCa('acme-renewal', new Date());
  const run = scratch();
  t.after(() => rmSync(run.dataDir, { recursive: true, force: true }));
  const staging = await storedPair(run, ca, NAMES, STAGING);
  assert.equal(usableStored(run.store, NAMES, PRODUCTION, new Date()), null);
  // Until production's arrives, the staging certificate is still what the listener serves.
  assert.equal(servableStored(run.store, NAMES[0] as string, new Date())?.certPem, staging.certPem);
  const switched = loopOf(run, ca);
  switched.loop.start();
  const production = await switched.firstIssued;
  await switched.loop.close();
  assert.deepEqual(run.replaced, [null]);
  assert.equal(run.store.certificate()?.directoryUrl, PRODUCTION);
  // The same directory, past two thirds of the lifetime: renewed, naming the certificate it replaces (RFC 9773 §5).
  const later = new Date(Date.now() + 300 * DAY_MS);
  const renewing = loopOf(run, ca, { now: () => later });
  renewing.loop.start();
  await renewing.firstIssued;
  await renewing.loop.close();
  assert.deepEqual(run.replaced, [null, serialOf(production)]);
});

test('a stored key that is not the certificate’s (a crash between writes) is neither usable nor served', async (t) => {
  const ca = await issueCa('acme-renewal', new Date());
  const run = scratch();
  t.after(() => rmSync(run.dataDir, { recursive: true, force: true }));
  const first = await issueServerCertificate(ca, NAMES, new Date());
  const second = await issueServerCertificate(ca, NAMES, new Date());
  run.store.saveCertificate({ certPem: first.certPem, keyPem: second.keyPem }, PRODUCTION);
  assert.equal(usableStored(run.store, NAMES, PRODUCTION, new Date()), null);
  assert.equal(servableStored(run.store, NAMES[0] as string, new Date()), null);
  run.store.saveCertificate(first, PRODUCTION);
  assert.equal(servableStored(run.store, 'other.meshgate.test', new Date()), null, 'not for the deployment domain');
  assert.equal(servableStored(run.store, NAMES[0] as string, new Date(Date.now() + 400 * DAY_MS)), null, 'expired');
});

test('an order that never ends fails at its deadline; close() does not wait for a hung order', async (t) => {
  const ca = await issueCa('acme-renewal', new Date());
  const run = scratch();
  t.after(() => rmSync(run.dataDir, { recursive: true, force: true }));
  const hung = new Promise<ServerKeyPair>(() => {});
  const { loop } = loopOf(run, ca, { orderDeadlineMs: 50, order: () => hung });
  loop.start();
  while (run.failures.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
  await loop.close();
  const status = run.store.status();
  assert.ok(status.failures >= 2);
  assert.match(status.lastError ?? '', /no certificate within 0\.05 s/);
  // Stopping while an order hangs, far from its deadline: close() returns, and no failure is recorded for it.
  const stopping = loopOf(run, ca, { directoryUrl: STAGING, order: () => hung });
  const begun = () => run.logs.filter((line) => line.msg === 'ACME order begun').length;
  const before = begun();
  stopping.loop.start();
  while (begun() === before) await new Promise((resolve) => setTimeout(resolve, 10));
  await stopping.loop.close();
  assert.equal(run.store.status().directoryUrl, PRODUCTION);
});

test('a status the disk refuses is logged once and the loop goes on; a corrupt one reads as empty', async (t) => {
  const ca = await issueCa('acme-renewal', new Date());
  const run = scratch();
  t.after(() => rmSync(run.dataDir, { recursive: true, force: true }));
  // A folder where the file should be: the rename fails whoever runs the test (root included).
  mkdirSync(join(run.store.dir, 'status.json'), { recursive: true });
  const { loop } = loopOf(run, ca, { order: async () => Promise.reject(new Error('the CA refuses')) });
  loop.start();
  while (run.failures.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
  await loop.close();
  const refused = run.logs.filter((line) => String(line.msg).startsWith('ACME status could not be written'));
  assert.equal(refused.length, 1);

  rmSync(join(run.store.dir, 'status.json'), { recursive: true });
  writeFileSync(join(run.store.dir, 'status.json'), '{"names": "not a list"');
  const problems: string[] = [];
  const store = new AcmeStore(run.dataDir, (error) => problems.push(error.message));
  assert.deepEqual(store.status(), NO_STATUS);
  assert.equal(problems.length, 1);
});

function serialOf(pair: ServerKeyPair): string {
  return new X509Certificate(pair.certPem).serialNumber;
}
