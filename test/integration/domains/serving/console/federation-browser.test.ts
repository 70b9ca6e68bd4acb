/**
 * The console's federation page with more records than one API call lists (its default `limit` is 100), in a real
 * browser (Debian's chromium) against `meshgate serve`, the shipped executable: the pages reach the 150th record, a
 * filter narrows them to one, DELETED records stay hidden until asked for, a record made by `meshgate federation
 * apply` says so and a disconnected one says why. Records are created through the API as unpaired receivers (no peer
 * needed). Two pairings with one peer (in process, as browser.test.ts pairs) show their name collision. With
 * MESHGATE_UPDATE_SCREENSHOTS=1 the shot replaces docs/console/'s, otherwise it goes to a temporary folder.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { browserTarget, launchBrowser, signIn } from '../../../../helpers/browser.ts';
import { newPsk, pairGateways, SHARED_ISSUER, startPeer } from '../../../../helpers/federation.ts';
import { ADMIN_PASSWORD as IN_PROCESS_ADMIN_PASSWORD } from '../../../../helpers/gateway.ts';
import { ADMIN_PASSWORD, adminToken, connection, workersScratch } from '../../../../helpers/workers.ts';

const UPDATE_DOCS = process.env.MESHGATE_UPDATE_SCREENSHOTS === '1';
const SHOTS = UPDATE_DOCS
  ? join(import.meta.dirname, '../../../../../docs/console')
  : mkdtempSync(join(tmpdir(), 'meshgate-federation-shots-'));
if (!UPDATE_DOCS) process.once('exit', () => rmSync(SHOTS, { recursive: true, force: true }));

/** More than the API's default page (100) and than two of the console's (50). */
const RECORDS = 170;
/** Every tenth record from the fifth on is deleted: 10 of the first 100. */
const DELETED = new Set(Array.from({ length: 10 }, (_, i) => 5 + 10 * i));
const peerName = (n: number) => `peer-${String(n).padStart(3, '0')}`;
/** A name a careless page would run as markup. */
const HOSTILE = '<img src=x onerror="window.pwned=1">';

const cards = (page: Page) => page.locator('article.card');
const card = (page: Page, name: string) => page.getByRole('article', { name, exact: true });
const range = (page: Page, text: string) =>
  page.getByRole('navigation', { name: 'Federation record pages' }).getByText(text, { exact: true }).waitFor();

test('the federation page pages through 170 records, filters them, hides DELETED ones until asked', async (t) => {
  const scratch = workersScratch(t, 'meshgate-fed-console-');
  const served = await scratch.serve(1);
  const api = connection(served);
  t.after(() => api.close());
  const token = await adminToken(served);
  const call = async (method: string, path: string, json?: unknown) => {
    const res = await api.call(method, path, { token, json });
    assert.equal(res.status, 200, `${method} ${path}: ${res.text}`);
    return res.json;
  };
  // A declared receiver, then a set without it: apply disconnects the record it made, which says why: the
  // first record.
  const declared = { name: 'peer-000', role: 'receiver', preshared_key: newPsk(), shared_issuer_url: SHARED_ISSUER };
  await call('POST', '/api/cluster/federations/apply', { peers: [declared] });
  await call('POST', '/api/cluster/federations/apply', { peers: [] });
  const [gone] = await call('GET', '/api/cluster/federations?q=peer-000');
  assert.equal(gone.declared_as, 'peer-000');
  assert.equal(gone.status, 'DISCONNECTED');
  assert.ok(gone.status_reason, 'a disconnected record says why');
  const ids = new Map<string, string>();
  for (let n = 1; n <= RECORDS; n++) {
    const body = { remote_cluster_name: peerName(n), role: 'receiver', preshared_key: newPsk() };
    const record = await call('POST', '/api/cluster/federations', { ...body, shared_issuer_url: SHARED_ISSUER });
    ids.set(peerName(n), record.id);
  }
  for (const n of DELETED) await call('DELETE', `/api/cluster/federations/${ids.get(peerName(n))}`);
  await call('POST', '/api/cluster/federations', {
    remote_cluster_name: HOSTILE,
    role: 'receiver',
    preshared_key: newPsk(),
    shared_issuer_url: SHARED_ISSUER,
  });

  const target = browserTarget(served, scratch.dir);
  const browser = await launchBrowser(t, [target]);
  const { page } = await signIn(browser, target, 'admin', ADMIN_PASSWORD);
  await page.getByRole('link', { name: 'Federation' }).click();

  // Page one: 50 cards in creation order, the deleted peer-005 left out.
  await range(page, 'Records 1–50');
  assert.equal(await cards(page).count(), 50);
  const disconnected = card(page, 'peer-000');
  await disconnected.getByText('DISCONNECTED', { exact: true }).waitFor();
  await disconnected.getByText(`(${gone.status_reason})`).waitFor();
  await disconnected.getByText('(peer peer-000)').waitFor();
  await card(page, peerName(1)).waitFor();
  assert.equal(await card(page, peerName(DELETED.values().next().value as number)).count(), 0);
  await page.getByRole('button', { name: 'Next 50' }).click();
  await range(page, 'Records 51–100');
  await page.getByRole('button', { name: 'Next 50' }).click();
  await range(page, 'Records 101–150');
  // The 150th record shown: after the declared one, and with the ten deleted ones before it left out, peer-159.
  assert.equal(await cards(page).last().getByRole('heading').textContent(), peerName(159));
  await page.getByRole('button', { name: 'Next 50' }).click();
  // The last page: the rest and the hostile name, which is text, never markup; nothing follows.
  await range(page, `Records 151–${RECORDS - DELETED.size + 2}`);
  await card(page, HOSTILE).waitFor();
  assert.equal(await page.evaluate(() => (window as { pwned?: number }).pwned), undefined);
  assert.ok(await page.getByRole('button', { name: 'Next 50' }).isDisabled());
  await page.getByRole('button', { name: 'Previous 50' }).click();
  await range(page, 'Records 101–150');

  // The filter goes to the API (`q`: name or id) and starts from the first page.
  const filter = page.getByRole('searchbox', { name: 'Filter' });
  await filter.fill(peerName(123));
  await card(page, peerName(123)).waitFor();
  await page.getByRole('navigation', { name: 'Federation record pages' }).waitFor({ state: 'detached' });
  assert.equal(await cards(page).count(), 1);
  await filter.fill((ids.get(peerName(42)) as string).slice(0, 13));
  await card(page, peerName(42)).waitFor();
  assert.equal(await cards(page).count(), 1);
  // LIKE's wildcards are plain text to the filter.
  await filter.fill('peer-0_1');
  await page.getByText('No federation records match “peer-0_1”.').waitFor();

  // A deleted record matches the filter but stays hidden until the toggle shows it, with its reason.
  const deletedName = peerName(15);
  await filter.fill(deletedName);
  await page.getByText(`No federation records match “${deletedName}”.`).waitFor();
  await page.getByRole('checkbox', { name: 'Show deleted records' }).check();
  await card(page, deletedName).getByText('DELETED', { exact: true }).waitFor();
  await card(page, deletedName).getByText('deleted here').waitFor();
  assert.equal(await card(page, deletedName).getByRole('button').count(), 0, 'nothing to do with a deleted record');

  // With the deleted ones shown, the 150th record is the 150th created: peer-149.
  await filter.fill('');
  await range(page, 'Records 1–50');
  await card(page, peerName(5)).waitFor();
  for (const next of ['Records 51–100', 'Records 101–150']) {
    await page.getByRole('button', { name: 'Next 50' }).click();
    await range(page, next);
  }
  assert.equal(await cards(page).last().getByRole('heading').textContent(), peerName(149));

  await filter.fill('peer-00');
  await card(page, peerName(5)).waitFor();
  await card(page, 'peer-000').waitFor();
  assert.equal(await cards(page).count(), 10);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(SHOTS, 'federation-pages.png') });
});

test('two PAIRED records with one name both say so, and how to select them', async (t) => {
  const [a, b] = [await startPeer(t, 'fed-a'), await startPeer(t, 'fed-b')];
  // On the receiver each pairing carries the initiator's cluster name: two PAIRED records named fed-a.
  const pairings = [await pairGateways(a, b), await pairGateways(a, b)];
  const browser = await launchBrowser(t, [b]);
  const { page } = await signIn(browser, b, 'admin', IN_PROCESS_ADMIN_PASSWORD);
  await page.getByRole('link', { name: 'Federation' }).click();
  for (const { receiverId } of pairings) {
    const paired = page.getByRole('article').filter({ hasText: receiverId });
    await paired.getByText('PAIRED', { exact: true }).waitFor();
    await paired.getByText('Another paired record is also named fed-a').waitFor();
  }
  assert.equal(await cards(page).count(), 2);
});
