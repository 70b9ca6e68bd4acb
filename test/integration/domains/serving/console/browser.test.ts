/**
 * The operator console in a real browser (Debian's chromium) against real
 * gateways: sign in through /login, pair two gateways from their cards and
 * watch both read PAIRED, open a deployed app, follow a job's log, change
 * routing and read the smoke results, and a non-admin who is offered no
 * admin page. Screenshots of each page land in docs/console/.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { launchBrowser, signIn } from '../../../../helpers/browser.ts';
import { createRecord, newPsk, routeTo, startPeer } from '../../../../helpers/federation.ts';
import { ADMIN_PASSWORD, startTestGateway } from '../../../../helpers/gateway.ts';
import { MARKER, submit, waitFor } from '../../../../helpers/jobs.ts';
import { deploy, startAppServer } from '../../../../helpers/upstreams.ts';

const SHOTS = join(import.meta.dirname, '../../../../../docs/console');

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
}

test('admin pairs two gateways from their cards; both cards read PAIRED and diagnose lists every layer', async (t) => {
  const [a, b] = [await startPeer(t, 'fed-a'), await startPeer(t, 'fed-b')];
  const psk = newPsk();
  await createRecord(b, { remote_cluster_name: 'fed-a', role: 'receiver', preshared_key: psk });
  await createRecord(a, {
    remote_cluster_name: 'fed-b',
    role: 'initiator',
    remote_ips: [routeTo(b)],
    preshared_key: psk,
  });
  const browser = await launchBrowser(t, [a, b]);
  const onA = (await signIn(browser, a, 'admin', ADMIN_PASSWORD)).page;
  const onB = (await signIn(browser, b, 'admin', ADMIN_PASSWORD)).page;
  for (const page of [onA, onB]) await page.getByRole('link', { name: 'Federation' }).click();
  const cardOn = (page: Page, peer: string) => page.getByRole('article', { name: peer });
  await cardOn(onA, 'fed-b').getByRole('button', { name: 'Pair fed-b' }).click();
  await cardOn(onA, 'fed-b').getByText('PAIRED', { exact: true }).waitFor();
  await cardOn(onB, 'fed-a').getByText('PAIRED', { exact: true }).waitFor();
  await cardOn(onA, 'fed-b').getByRole('button', { name: 'Diagnose fed-b' }).click();
  const checklist = cardOn(onA, 'fed-b').getByRole('list', { name: 'Connection layers' });
  await checklist.getByText('All layers pass').or(onA.getByText('All layers pass')).first().waitFor();
  assert.ok((await checklist.getByRole('listitem').count()) >= 3, 'diagnose shows each layer');
  await shoot(onA, 'federation');
});

test('deployments, jobs with their log, routing with smoke results; a non-admin sees no admin page', async (t) => {
  const gw = await startTestGateway(t);
  const app = await startAppServer(t);
  await deploy(gw, { kind: 'app', name: 'notes', upstream: app.url });
  const job = await submit(gw, await gw.adminToken(), {
    entrypoint: `echo console-log-line; echo '${MARKER}{"ok":1}'`,
  });
  assert.equal(job.status, 201, job.text);
  await waitFor(gw, await gw.adminToken(), job.json.id);
  const browser = await launchBrowser(t, [gw]);
  const { page } = await signIn(browser, gw, 'admin', ADMIN_PASSWORD);

  await page.getByRole('table', { name: 'Deployments' }).getByText('notes').waitFor();
  await page.getByRole('region', { name: 'Traffic' }).waitFor();
  await shoot(page, 'deployments');
  const [opened] = await Promise.all([
    page.waitForEvent('load'),
    page.getByRole('link', { name: /\/runtime\/apps\// }).click(),
  ]);
  assert.ok(opened);
  await page.getByRole('link', { name: 'dashboard' }).waitFor();
  await page.goBack();

  await page.getByRole('link', { name: 'Jobs' }).click();
  await page.getByRole('button', { name: `Log of ${job.json.id}` }).click();
  await page.getByText('console-log-line').waitFor();
  await shoot(page, 'jobs');

  await page.getByRole('link', { name: 'Routing' }).click();
  await page.getByLabel('tools prefix').fill('tools-without-slash');
  await page.getByRole('button', { name: 'Validate and apply' }).click();
  await page.getByText('Not applied').waitFor();
  assert.equal(
    (await gw.request('GET', '/api/config/routing', { token: await gw.adminToken() })).json.service_prefixes.tools,
    '/runtime/tools',
  );
  await page.getByLabel('tools prefix').fill('/runtime/toolbox');
  await page.getByRole('button', { name: 'Validate and apply' }).click();
  const smoke = page.getByRole('table', { name: 'Smoke checks' });
  await smoke.waitFor({ timeout: 60_000 });
  await smoke
    .getByRole('row', { name: /api_ping/ })
    .getByText('pass')
    .waitFor();
  assert.equal(
    (await gw.request('GET', '/api/config/routing', { token: await gw.adminToken() })).json.service_prefixes.tools,
    '/runtime/toolbox',
  );
  await shoot(page, 'routing');

  for (const [link, name] of [
    ['Catalog', 'catalog'],
    ['Retrieval', 'retrieval'],
    ['Users', 'users'],
  ] as const) {
    await page.getByRole('link', { name: link, exact: true }).click();
    await page.getByRole('heading', { level: 2 }).first().waitFor();
    await shoot(page, name);
  }

  await gw.userToken('viewer');
  const viewer = (await signIn(browser, gw, 'viewer', 'viewer-password')).page;
  const nav = viewer.getByRole('navigation', { name: 'Console pages' });
  await nav.getByRole('link', { name: 'Deployments' }).waitFor();
  assert.equal(await nav.getByRole('link', { name: 'Federation' }).count(), 0);
  assert.equal(await nav.getByRole('link', { name: 'Users' }).count(), 0);
  await viewer.goto(`${gw.url}/console/#/users`);
  await viewer.getByRole('heading', { name: 'Deployments', level: 2 }).waitFor();
  assert.equal(await viewer.getByRole('button', { name: 'Validate and apply' }).count(), 0);
});
